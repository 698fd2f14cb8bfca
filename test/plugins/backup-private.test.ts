import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, chownSync, lstatSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { backupNameFor } from '../../db/backup-files.js'
import { takeBackup } from '../../db/backups.js'
import { openDatabase } from '../../db/connection.js'
import { NOBODY, readAsNobody } from '../as-nobody.js'
import { buildTestApp, operatorHealth } from '../helper.js'
import { until } from '../reliability/fault-helpers.js'

const isRoot = process.getuid?.() === 0
const needsRoot = isRoot ? {} : { skip: 'acting as another user needs root' }

/** A database of the service with ~24 MB beside its tables, so that the online copy takes several steps. */
function databaseWithBallast(path: string): void {
  const db = openDatabase(path)
  db.exec('CREATE TABLE ballast (b BLOB)')
  const insert = db.prepare('INSERT INTO ballast VALUES (randomblob(65536))')
  db.transaction(() => {
    for (let i = 0; i < 384; i++) insert.run()
  })()
  db.close()
}

t.test(
  'the temporary copy is 0600 from its first bytes: another user cannot read it while the copy runs',
  needsRoot,
  async (t) => {
    const root = t.testdir({ backups: {} })
    const dir = join(root, 'backups')
    // Open to others (allowed: its files are private), so that only each file's own mode protects it.
    chmodSync(dir, 0o755)
    chmodSync(root, 0o755)
    const path = join(root, 'ward.db')
    databaseWithBallast(path)
    const seen: { mode: number; size: number; nobody: string }[] = []
    let watching = true
    // Every turn of the event loop, between the copy's steps: what is in the directory meanwhile.
    const watch = () => {
      for (const name of readdirSync(dir).filter((n) => n.includes('.partial'))) {
        try {
          const stat = statSync(join(dir, name))
          // Each new size once (the copy grows by a step at a time); spawning a reader pauses the copy.
          if (stat.size > 0 && seen.length < 6 && !seen.some((s) => s.size === stat.size))
            seen.push({ mode: stat.mode & 0o777, size: stat.size, nobody: readAsNobody(join(dir, name)) })
        } catch {
          // renamed or removed meanwhile
        }
      }
      if (watching) setImmediate(watch)
    }
    watch()
    const before = process.umask(0o000)
    const { app } = await buildTestApp(t, { DATABASE_PATH: path, BACKUP_DIR: dir }).finally(() => process.umask(before))
    await until(() => app.backups.status()?.last != null)
    watching = false
    t.ok(
      seen.some(({ size }) => size >= 4 << 20),
      'the copy was seen half-done, with megabytes of patient data in it',
    )
    for (const { mode, size, nobody } of seen) {
      t.equal(mode, 0o600, `0600 with ${size} bytes copied`)
      t.equal(nobody, 'EACCES', 'another user cannot open it')
    }
    const kept = app.backups.status()?.last?.file as string
    t.equal(statSync(kept).mode & 0o777, 0o600, 'the kept backup too')
    t.equal(readAsNobody(kept), 'EACCES')
  },
)

t.test('a BACKUP_DIR that others could read into or redirect stops the start, naming the setting', async (t) => {
  const root = t.testdir({ real: {}, open: {} })
  symlinkSync(join(root, 'real'), join(root, 'link'))
  await t.rejects(buildTestApp(t, { BACKUP_DIR: join(root, 'link') }), {
    name: 'ConfigError',
    message: /^BACKUP_DIR: the backup directory .*link is a symbolic link/,
  })
  chmodSync(join(root, 'open'), 0o775)
  await t.rejects(buildTestApp(t, { BACKUP_DIR: join(root, 'open') }), { message: /BACKUP_DIR: .*writable by others/ })
  if (isRoot) {
    chownSync(join(root, 'real'), NOBODY, NOBODY)
    await t.rejects(buildTestApp(t, { BACKUP_DIR: join(root, 'real') }), {
      message: /BACKUP_DIR: .*belongs to uid 65534/,
    })
  }
})

t.test('the CLI refuses to serve with such a BACKUP_DIR, with the reason on stderr', async (t) => {
  const root = t.testdir({ real: {} })
  symlinkSync(join(root, 'real'), join(root, 'link'))
  const child = spawn(process.execPath, ['--import=tsx', 'cli.ts', 'serve'], {
    env: { ...process.env, DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: join(root, 'link'), PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  // A server that started anyway is stopped at once, so that the test fails rather than waits.
  child.stdout.on('data', (chunk) => {
    if (/listening/i.test(String(chunk))) child.kill('SIGKILL')
  })
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, /facility-service: BACKUP_DIR: the backup directory .*link is a symbolic link/)
  t.same(readdirSync(join(root, 'real')), [], 'nothing written where the link pointed')
})

t.test('a BACKUP_DIR swapped for a link after the start: the backups fail, nothing goes where it points', async (t) => {
  const root = t.testdir({ backups: {} })
  const dir = join(root, 'backups')
  const { app } = await buildTestApp(t, { DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: dir })
  await until(() => app.backups.status()?.last != null)
  // Moved away, and a link in its place pointing to it: a directory someone else could now choose.
  const target = join(root, 'elsewhere')
  renameSync(dir, target)
  symlinkSync(target, dir)
  const before = readdirSync(target)
  await app.backups.runNow()
  t.match(app.backups.status()?.failing, { message: /symbolic link/ })
  t.same(readdirSync(target), before, 'the link target got nothing')
  const health = await operatorHealth(app)
  t.match(health.json().backups.failing.message, /symbolic link/)
  t.notOk('lastAt' in health.json().backups, 'and the backup there is not read through the link')
})

t.test('a link planted at the final name is replaced by the backup, never written through', async (t) => {
  const root = t.testdir({ backups: {}, theirs: { 'their.db': 'their bytes' } })
  const dir = join(root, 'backups')
  const db = openDatabase(join(root, 'ward.db'))
  t.teardown(() => db.close())
  const at = Date.parse('2026-11-27T10:00:00.000Z')
  const victim = join(root, 'theirs', 'their.db')
  symlinkSync(victim, join(dir, backupNameFor(at)))
  const backup = await takeBackup(db, dir, at)
  const stat = lstatSync(backup.file)
  t.ok(stat.isFile() && !stat.isSymbolicLink(), 'the kept backup is a file of its own, not the link')
  t.equal(readFileSync(victim, 'utf8'), 'their bytes', "the link's target is untouched")
  t.same(readdirSync(join(root, 'theirs')), ['their.db'], 'and nothing was added beside it')
  const copy = new BetterSqlite3(backup.file, { readonly: true })
  t.teardown(() => copy.close())
  t.equal(copy.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'tokens'").pluck().get(), 1)
})

t.test('CLI backup FILE: 0600 under umask 000, never through a link, never over a file', async (t) => {
  const { runCli } = await import('../../cli/run.js')
  const { capture } = await import('../cli/capture.js')
  const root = t.testdir({ theirs: { 'their.db': 'their bytes' } })
  const database = join(root, 'ward.db')
  openDatabase(database).close()
  const before = process.umask(0o000)
  let io = capture()
  const code = await runCli(['--database', database, 'backup', join(root, 'copy.db')], io).finally(() =>
    process.umask(before),
  )
  t.equal(code, 0, io.stderr.join('\n'))
  t.equal(statSync(join(root, 'copy.db')).mode & 0o777, 0o600, 'created private: it is never chmodded afterwards')
  t.same(
    readdirSync(root).filter((name) => /copy\.db-/.test(name)),
    [],
    'no -wal or -shm beside it',
  )
  symlinkSync(join(root, 'theirs', 'their.db'), join(root, 'planted.db'))
  io = capture()
  t.equal(await runCli(['--database', database, 'backup', join(root, 'planted.db')], io), 1)
  t.match(io.stderr.join('\n'), /exists already/)
  t.equal(readFileSync(join(root, 'theirs', 'their.db'), 'utf8'), 'their bytes', 'the link was not followed')
  io = capture()
  t.equal(await runCli(['--database', database, 'backup', join(root, 'copy.db')], io), 1, 'an existing file')
})
