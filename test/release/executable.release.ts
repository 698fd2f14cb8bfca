import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { stopServer } from '../reliability/server-process.js'
import { bareEnvironment, installAlone, readEvents, releaseBuild, runExecutable, serveExecutable } from './helpers.js'

// The single executable the way a facility runs it: copied alone into an empty folder and started
// with nothing but PATH=/nonexistent and a HOME, so no Node, npm, node_modules or network can help.
const release = releaseBuild()

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex')

/**
 * Whether the database file alone (a copy, without its WAL) holds the ward occupant: only a
 * checkpoint puts it there, and while the server runs only its checkpoint worker makes one.
 */
async function inDatabaseFile(database: string, id: string): Promise<boolean> {
  for (let tries = 0; tries < 100; tries++) {
    const copy = `${database}.copy-${tries}`
    copyFileSync(database, copy)
    const reader = new BetterSqlite3(copy, { readonly: true })
    try {
      if (reader.prepare('SELECT 1 FROM ward_occupants WHERE id = ?').get(id)) return true
    } catch {
      // The copy may catch a page in the middle of being written: try again.
    } finally {
      reader.close()
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}

t.test('the release: the executable, its archive, and their checksums', async (t) => {
  const sums = readFileSync(release.sums, 'utf8').trim().split('\n')
  t.same(sums, [`${sha256(release.executable)}  ${release.name}`, `${sha256(release.archive)}  ${release.name}.tar.gz`])
  const listed = execFileSync('tar', ['tzf', release.archive], { encoding: 'utf8' }).trim().split('\n').sort()
  const inside = [
    '',
    'CHANGELOG.md',
    'CLI.md',
    'METRICS.md',
    'OPERATIONS.md',
    'README.md',
    'SECURITY.md',
    'SETTINGS.md',
    'THIRD-PARTY-NOTICES.txt',
    'prometheus/',
    'prometheus/facility-service.dashboard.json',
    'prometheus/facility-service.rules.yml',
  ]
  t.same(listed, [...inside, 'facility-service', 'facility-service.service'].map((f) => `${release.name}/${f}`).sort())
  const notices = execFileSync('tar', ['xzOf', release.archive, `${release.name}/THIRD-PARTY-NOTICES.txt`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  for (const part of [
    'Node.js 26',
    'better-sqlite3@',
    'SQLite',
    'QuickJS',
    'pug@',
    'ejs@',
    'fastify@',
    'swagger-ui-dist@',
  ]) {
    t.ok(notices.includes(part), `the notices name ${part}`)
  }
  t.notOk(notices.includes('needs review'), 'every package has its license text')
})

t.test('--version, --help and a command without a database', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  const version = await runExecutable(install, ['--version'])
  t.same(version, { code: 0, stdout: `${release.version}\n`, stderr: '' })
  const help = await runExecutable(install, ['--help'])
  t.equal(help.code, 0)
  for (const command of ['serve', 'token', 'backup', 'audit', 'notify', 'beds', 'smoke']) {
    t.match(help.stdout, new RegExp(`\\n  ${command}\\b`), `--help lists ${command}`)
  }
  const missing = await runExecutable(install, ['token', 'list', '--database', 'nowhere.db'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^facility-service: no database at nowhere\.db/)
})

t.test('the ward works from the executable alone: HTTP, the feed, print and the CLI', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  // A module planted where a require() from the executable's folder would look is never loaded.
  const planted = join(install.dir, 'planted-module-ran')
  mkdirSync(join(install.dir, 'node_modules', 'supports-color'), { recursive: true })
  writeFileSync(
    join(install.dir, 'node_modules', 'supports-color', 'index.js'),
    `require('fs').writeFileSync('${planted}', '')`,
  )
  const server = await serveExecutable(install, { DEBUG: '*', NODE_PATH: join(install.dir, 'node_modules') })
  t.teardown(() => stopServer(server))
  const { base } = server
  const tokenFile = join(install.dir, 'data', 'first-admin-token')
  t.equal(statSync(tokenFile).mode & 0o777, 0o600, 'the first-start token is the service user’s only')
  const admin = readFileSync(tokenFile, 'utf8').trim()
  // The secret is what must not leak (the id is public): whole, and by every 12 characters of it.
  const secret = /^fs_[0-9a-f]{24}_(.{43})$/.exec(admin)?.[1] ?? ''
  t.equal(secret.length, 43, 'the secret part of the token')
  const logged = server.output()
  t.same(
    Array.from({ length: secret.length - 11 }, (_, i) => secret.slice(i, i + 12)).filter((w) => logged.includes(w)),
    [],
    'and never in the log, not even 12 characters of its secret',
  )

  const created = await runExecutable(install, ['token', 'create', '--account', 'nurse-7', '--role', 'write'])
  t.equal(created.code, 0, created.stderr)
  const nurse = created.stdout.trim().split('\n').at(-1) as string
  const call = (token: string, method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })

  const feed = await call(admin, 'GET', '/events?resources=ward-occupants')
  t.equal(feed.status, 200)
  const events = readEvents(feed, 'event: ward-occupants patched')
  const admitted = await call(nurse, 'POST', '/ward-occupants', { encounter: 'e-1', bed: 'B-1', occupiedBy: 'p-1' })
  t.equal(admitted.status, 200, 'an admission with a token made by the CLI')
  const { id } = (await admitted.json()) as { id: string }
  const discharged = await call(nurse, 'PATCH', `/ward-occupants/${id}`, { discharge: true })
  t.equal(discharged.status, 200, 'a discharge')
  const stream = await events
  t.match(stream, /event: ward-occupants created\ndata: .*"B-1"/, 'the admission on /events')
  t.match(stream, /event: ward-occupants patched\ndata: .*"dischargedAt"/, 'the discharge on /events')
  t.ok(await inDatabaseFile(join(install.dir, 'data', 'facility.db'), id), 'the checkpoint worker copied it back')
  t.notMatch(server.output(), /checkpoint/, 'no checkpoint failed')

  t.match(await (await fetch(`${base}/board`)).text(), /<html/, '/board')
  t.equal((await fetch(`${base}/board/board.js`)).status, 200, 'the board’s script')
  t.match(await (await fetch(`${base}/docs/`)).text(), /swagger-ui/, '/docs')
  t.equal((await fetch(`${base}/docs/static/swagger-ui-bundle.js`)).status, 200, 'the OpenAPI page’s files')
  const openapi = (await (await fetch(`${base}/openapi.json`)).json()) as { info: { version: string } }
  t.equal(openapi.info.version, release.version)

  const render = async (template: string, engine: string, data: object) => {
    const form = await call(admin, 'POST', '/form-templates', { type: 'print', name: 'Chart', template })
    const { id } = (await form.json()) as { id: string }
    return (await call(admin, 'POST', `/form-templates/${id}/render`, { engine, data })).text()
  }
  t.equal(await render('h1= name\np Bed #{data.bed}', 'pug', { bed: 'B-7' }), '<h1>Chart</h1><p>Bed B-7</p>', 'pug')
  t.equal(await render('<h1><%= name %></h1><%= data.bed %>', 'ejs', { bed: 'B-8' }), '<h1>Chart</h1>B-8', 'ejs')
  t.match(await render("p(title='x'.repeat(2)) hi", 'pug', {}), 'title="xx"', 'pug folds literals only (ran inside)')

  const backup = join(install.dir, 'backup.db')
  t.equal((await runExecutable(install, ['backup', backup])).code, 0, 'backup while serving')
  t.match((await runExecutable(install, ['backup', 'verify', backup])).stdout, /ok/)
  t.match((await runExecutable(install, ['audit'])).stdout, /"operation":"patch"/, 'audit')
  const notify = ['notify', '--code', 'c', '--type', 't', '--title', 'Hello', '--body', 'ward']
  t.equal((await runExecutable(install, notify)).code, 0, 'notify')
  t.equal((await runExecutable(install, ['beds', 'list'])).code, 0, 'beds')
  t.match((await runExecutable(install, ['smoke'])).stdout, /smoke test passed/, 'smoke on a copy')

  t.equal(await stopServer(server), 0, 'SIGTERM: a clean stop')
  t.notOk(existsSync(planted), 'no module was loaded from the disk')
})

t.test('the SQLite addon: private, named by its checksum, verified before it is loaded', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  const list = (extra: Record<string, string> = {}) => runExecutable(install, ['token', 'list'], extra)
  t.equal((await runExecutable(install, ['token', 'create', '--account', 'a', '--role', 'read'])).code, 0)
  const cache = join(install.home, '.cache', 'facility-service')
  t.equal(statSync(cache).mode & 0o777, 0o700, 'the cache directory is its user’s only')
  const addon = execFileSync('ls', [cache], { encoding: 'utf8' })
    .split('\n')
    .find((f) => f.endsWith('.node')) as string
  const file = join(cache, addon)
  t.equal(basename(file), `better_sqlite3-${sha256(file)}.node`, 'named by its sha256')

  execFileSync('chmod', ['u+w', file])
  execFileSync('sh', ['-c', `printf tampered >> '${file}'`])
  t.equal((await list()).code, 0, 'a changed file is replaced before loading')
  t.equal(basename(file), `better_sqlite3-${sha256(file)}.node`)

  execFileSync('chmod', ['755', cache])
  const refused = await list()
  t.equal(refused.code, 1, 'a directory others may enter is refused')
  t.match(refused.stderr, /has mode 755; it must be 700/)
  execFileSync('chmod', ['700', cache])

  const xdg = join(install.dir, 'xdg')
  t.equal((await list({ XDG_CACHE_HOME: xdg })).code, 0)
  t.match(
    execFileSync('ls', [join(xdg, 'facility-service')], { encoding: 'utf8' }),
    /better_sqlite3-[0-9a-f]{64}\.node/,
  )
  const systemd = join(install.dir, 'systemd-cache')
  t.equal((await list({ CACHE_DIRECTORY: systemd, XDG_CACHE_HOME: xdg })).code, 0, 'systemd’s CacheDirectory= first')
  t.equal(statSync(systemd).mode & 0o777, 0o700)
  t.same(Object.keys(bareEnvironment(install)).sort(), ['HOME', 'PATH'], 'nothing else in the environment')

  const proc = await list({ HOME: '/proc' })
  t.equal(proc.code, 1, 'HOME=/proc: a cache that cannot be made ends the command (it spun in mkdir for ever)')
  t.match(proc.stderr, /cannot create the cache directory \/proc\/\.cache \(ENOENT\)/)
  const theirs = join(install.dir, 'home-of-nobody')
  mkdirSync(theirs)
  chownSync(theirs, 65534, 65534)
  const refusedParent = await list({ XDG_CACHE_HOME: theirs })
  t.equal(refusedParent.code, 1, 'a directory above the cache of another user is refused')
  t.match(refusedParent.stderr, `${theirs} belongs to uid 65534, not to root or this user`)
})
