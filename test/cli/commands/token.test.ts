import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { runCli } from '../../../cli/run.js'
import { openDatabase } from '../../../db/connection.js'
import { bearer, buildTestApp } from '../../helper.js'
import { capture } from '../capture.js'

t.test('tokens made and revoked by the CLI count at once on a running server', async (t) => {
  const path = join(t.testdir(), 'live.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path })
  const io = capture()
  const code = await runCli(
    [
      '--database',
      path,
      'token',
      'create',
      '--account',
      'nurse-7',
      '--role',
      'write',
      '--facility',
      'A',
      '--label',
      'ward 7',
    ],
    io,
  )
  t.equal(code, 0)
  const token = io.stdout.at(-1) as string
  t.match(token, /^fs_[0-9a-f]{24}_[A-Za-z0-9_-]{43}$/, 'the token alone on the last line')
  const admit = { encounter: 'e', bed: 'b', occupiedBy: 'p' }
  const created = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: admit })
  t.equal(created.statusCode, 200)
  t.match(created.json(), { createdBy: 'nurse-7', facility: 'A' })

  const list = capture()
  t.equal(await runCli(['--database', path, 'token', 'list', '--json'], list), 0)
  const mine = list.stdout.map((l) => JSON.parse(l)).find((i) => i.account === 'nurse-7')
  t.match(mine, { role: 'write', facility: 'A', label: 'ward 7', revokedAt: null })
  t.notOk(list.stdout.join('\n').includes(token.slice(30)), 'no secret is listed')

  t.equal(await runCli(['--database', path, 'token', 'revoke', mine.tokenId], capture()), 0)
  const after = await app.inject({ url: '/ward-occupants', headers: bearer(token) })
  t.equal(after.statusCode, 401, 'revoked on the next request')
})

t.test('bad CLI input gives a non-zero exit and a message', async (t) => {
  const path = join(t.testdir(), 'cli.db')
  openDatabase(path).close()
  const cases: [string[], RegExp][] = [
    [['token', 'create', '--role', 'write'], /--account/],
    [['token', 'create', '--account', 'a', '--role', 'boss'], /Allowed choices are read, write, admin/],
    [['token', 'create', '--account', 'a', '--role', 'read', '--expires-in', 'soon'], /e\.g\. 90s/],
    [['token', 'create', '--account', ' ', '--role', 'read'], /must not be empty/],
    [['token', 'revoke', 'nope'], /no active token with id nope/],
    [['token', 'frobnicate'], /unknown command/],
  ]
  for (const [args, message] of cases) {
    const io = capture()
    const code = await runCli(['--database', path, ...args], io)
    t.not(code, 0, args.join(' '))
    t.match(io.stderr.join('\n'), message, `${args.join(' ')}: message`)
  }
})

t.test('expires-in sets an expiry that the server honours', async (t) => {
  const path = join(t.testdir(), 'exp.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: path })
  const io = capture()
  await runCli(['--database', path, 'token', 'create', '--account', 'a', '--role', 'read', '--expires-in', '1h'], io)
  const token = io.stdout.at(-1) as string
  const info = app.tokens.list().find((i) => i.account === 'a')
  t.ok(info?.expiresAt && info.expiresAt > Date.now() + 3_500_000 && info.expiresAt < Date.now() + 3_700_000)
  t.equal((await app.inject({ url: '/ward-occupants', headers: bearer(token) })).statusCode, 200)
})

t.test('the real command prints the token alone on the last line of stdout', async (t) => {
  const path = join(t.testdir(), 'bin.db')
  const run = promisify(execFile)
  const { stdout } = await run(process.execPath, [
    '--import=tsx',
    'cli.ts',
    '--database',
    path,
    'token',
    'create',
    '--account',
    'x',
    '--role',
    'admin',
  ])
  const lines = stdout.trimEnd().split('\n')
  t.match(lines.at(-1), /^fs_[0-9a-f]{24}_[A-Za-z0-9_-]{43}$/)
})
