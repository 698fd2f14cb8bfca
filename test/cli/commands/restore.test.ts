import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t, { type Test } from 'tap'
import { runCli } from '../../../cli/run.js'
import { bearer, buildTestApp } from '../../helper.js'
import { capture } from '../capture.js'

async function restore(args: string[]) {
  const io = capture()
  const code = await runCli(['restore', ...args], io)
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') }
}

/** A database with three admissions, closed, and a backup of it taken with the CLI. */
async function backupOf(t: Test, dir: string): Promise<{ backup: string; ids: string[] }> {
  const live = join(dir, 'live.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: live })
  const ids: string[] = []
  for (const bed of ['B-1', 'B-2', 'B-3']) {
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(tokens.write),
      payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p' },
    })
    ids.push(res.json().id)
  }
  const backup = join(dir, 'backup.db')
  t.equal(await runCli(['--database', live, 'backup', backup], capture()), 0)
  await app.close()
  return { backup, ids }
}

/** Another process (a plain Node with the SQLite binding) holding the database open, idle. */
async function holdOpen(t: Test, path: string) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const db = new (require('better-sqlite3'))(${JSON.stringify(path)}); db.prepare('SELECT 1').get(); console.log('open'); setInterval(() => {}, 1000)`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  t.teardown(() => child.kill('SIGKILL'))
  await once(child.stdout, 'data')
  return child
}

t.test('restore from a backup file: a checked, private copy, with what it holds', async (t) => {
  const dir = t.testdir()
  const { backup, ids } = await backupOf(t, dir)
  const to = join(dir, 'standby', 'facility.db')
  const { code, out } = await restore(['--from', backup, '--to', to])
  t.equal(code, 0)
  t.match(out, `restored ${backup} to ${to}: integrity ok, 3 ward occupants`)
  t.match(out, /newest change in it: \d{4}-\d\d-\d\dT/)
  t.match(out, `start the server on it: DATABASE_PATH=${to}`)
  t.equal(statSync(to).mode & 0o777, 0o600, 'readable by its user only')
  t.same(readdirSync(join(dir, 'standby')), ['facility.db'], 'no temporary file, -wal or -shm left')
  const db = new BetterSqlite3(to, { readonly: true })
  t.same((db.prepare('SELECT id FROM ward_occupants ORDER BY id').pluck().all() as string[]).sort(), ids.sort())
  db.close()
})

t.test('restore refuses to write over a database, or beside what one left', async (t) => {
  const dir = t.testdir({ 'taken.db': 'x', 'left.db-wal': 'x', 'left2.db-shm': 'x' })
  const { backup } = await backupOf(t, dir)
  for (const [to, named] of [
    ['taken.db', 'taken.db'],
    ['left.db', 'left.db-wal'],
    ['left2.db', 'left2.db-shm'],
  ] as const) {
    const { code, err } = await restore(['--from', backup, '--to', join(dir, to)])
    t.equal(code, 1, to)
    t.match(err, `${join(dir, named)} exists: a restore never writes over a database`)
  }
  t.notOk(existsSync(join(dir, 'left.db')), 'nothing was written')
})

t.test('restore refuses a path a process has open, also once its files were deleted', async (t) => {
  const dir = t.testdir()
  const { backup } = await backupOf(t, dir)
  const path = join(dir, 'served.db')
  t.equal(await runCli(['--database', path, 'token', 'create', '--account', 'a', '--role', 'read'], capture()), 0)
  const holder = await holdOpen(t, path)
  let { code, err } = await restore(['--from', backup, '--to', path])
  t.equal(code, 1)
  t.match(
    err,
    `${path} is open by process ${holder.pid} (node): stop it (systemctl stop facility-service, or kill ${holder.pid}), then restore`,
  )

  // The operator deleted the files; the server still runs on them. A new file at that path would
  // look free to any lock, and whatever that server acknowledges from now on would be lost.
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true })
  ;({ code, err } = await restore(['--from', backup, '--to', path]))
  t.equal(code, 1)
  t.match(err, `process ${holder.pid} (node) still has a deleted database at ${path} open`)
  t.notOk(existsSync(path), 'nothing was written')
})

t.test('restore says what is wrong with its source', async (t) => {
  const dir = t.testdir({ 'empty-replica': {}, 'not-ours.db': '' })
  const { backup } = await backupOf(t, dir)
  const other = new BetterSqlite3(join(dir, 'not-ours.db'))
  other.exec('CREATE TABLE t (x)')
  other.close()
  const live = join(dir, 'live.db')
  const open = new BetterSqlite3(live)
  open.pragma('journal_mode = WAL')
  open.exec('CREATE TABLE IF NOT EXISTS t (x)')
  t.teardown(() => open.close())
  const to = join(dir, 'out.db')
  const cases: [string[], RegExp | string][] = [
    [['--from', join(dir, 'nothing')], /--from .*nothing: no such backup file or replica directory/],
    [['--from', join(dir, 'not-ours.db')], /the restored copy failed its check \(not a facility-service database/],
    [['--from', live], /has a -wal beside it: a live database, not a backup/],
    [['--from', backup, '--timestamp', '2026-11-25T20:00:00Z'], /--timestamp applies to replicas/],
    [['--from', join(dir, 'empty-replica'), '--timestamp', 'yesterday'], /--timestamp yesterday: expected an RFC 3339/],
    [
      ['--from', join(dir, 'empty-replica')],
      /no backup in the replica .*empty-replica \(Litestream: no matching backups/,
    ],
    [['--from', 'ftp://host/x'], /--from: ftp:\/\/ is not supported/],
    [['--from', 'sftp://bob:Secret-pw-9@127.0.0.1:1/x'], /Litestream could not restore from sftp:\/\/bob:\*\*\*@/],
  ]
  for (const [args, message] of cases) {
    const { code, err } = await restore([...args, '--to', to])
    t.equal(code, 1, args.join(' '))
    t.match(err, message)
    t.notMatch(err, /Secret-pw-9/, 'no password in the message')
    t.notOk(existsSync(to), 'nothing was written')
  }
  t.same(
    readdirSync(dir).filter((name) => name.includes('restoring')),
    [],
    'no temporary file left',
  )
})

t.test('a backup that `backup verify` read restores; one a process holds open is refused as live', async (t) => {
  const dir = t.testdir()
  const { backup, ids } = await backupOf(t, dir)
  t.equal(await runCli(['backup', 'verify', backup], capture()), 0)
  const to = join(dir, 'after-verify', 'facility.db')
  const { code, err } = await restore(['--from', backup, '--to', to])
  t.equal(code, 0, `restored: ${err}`)
  const db = new BetterSqlite3(to, { readonly: true })
  t.same((db.prepare('SELECT id FROM ward_occupants').pluck().all() as string[]).sort(), ids.sort())
  db.close()

  const holder = await holdOpen(t, backup)
  const held = await restore(['--from', backup, '--to', join(dir, 'held', 'facility.db')])
  t.equal(held.code, 1)
  t.match(held.err, `--from ${backup} is open by process ${holder.pid} (node): a live database, not a backup`)
})
