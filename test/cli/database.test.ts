import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { capture } from './capture.js'

t.test('a mistyped --database is refused, not created: only token create may start a new file', async (t) => {
  const missing = join(t.testdir(), 'typo.db')
  const commands = [
    ['token', 'list'],
    ['token', 'revoke', 'x'],
    ['audit'],
    ['backup', join(t.testdir(), 'copy.db')],
    ['notify', '--code', 'c', '--type', 't', '--title', 'T', '--body', 'B'],
  ]
  for (const args of commands) {
    const io = capture()
    t.equal(await runCli(['--database', missing, ...args], io), 1, args.join(' '))
    t.match(io.stderr.join('\n'), `no database at ${missing}`, `${args[0]}: message`)
    t.same(io.stdout, [])
    t.notOk(existsSync(missing), `${args[0]}: no file was created`)
  }
  t.notOk(existsSync(join(t.testdir(), 'copy.db')), 'no backup file either')
  const io = capture()
  t.equal(await runCli(['--database', missing, 'token', 'create', '--account', 'a', '--role', 'admin'], io), 0)
  t.ok(existsSync(missing), 'token create prepares a new database')
})
