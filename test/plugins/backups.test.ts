import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { listBackups, pruneBackups, verifyBackup } from '../../db/backups.js'
import { openDatabase } from '../../db/connection.js'
import { capture } from '../cli/capture.js'
import { bearer, buildTestApp } from '../helper.js'
import { buildLoggedApp, until } from '../reliability/fault-helpers.js'
import { backupDatedAt } from './backup-fixtures.js'

const admit = (bed: string) => ({ encounter: `e-${bed}`, bed, occupiedBy: `p-${bed}` })

t.test(
  'a scheduled backup is a checked, private copy with every acknowledged write, taken while writes go on',
  async (t) => {
    const dir = t.testdir({ backups: {} })
    const backups = join(dir, 'backups')
    const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: join(dir, 'ward.db'), BACKUP_DIR: backups })
    await until(() => app.backups.status()?.last !== null)
    const acknowledged: string[] = []
    for (let i = 0; i < 20; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers: bearer(tokens.write),
        payload: admit(`B-${i}`),
      })
      acknowledged.push(res.json().id)
    }
    // Writes in flight while the copy is taken: they join the copy or the next one, never half.
    const during = Array.from({ length: 10 }, (_, i) =>
      app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(tokens.write), payload: admit(`C-${i}`) }),
    )
    await app.backups.runNow()
    await Promise.all(during)
    const newest = listBackups(backups)[0]
    t.ok(newest, 'a backup file')
    const file = newest?.file as string
    t.equal(statSync(file).mode & 0o777, 0o600, 'readable by the service user only')
    t.same(verifyBackup(file), { ok: true, message: 'ok' })
    const copy = new BetterSqlite3(file, { readonly: true })
    t.teardown(() => copy.close())
    const ids = new Set(copy.prepare('SELECT id FROM ward_occupants').pluck().all() as string[])
    t.ok(
      acknowledged.every((id) => ids.has(id)),
      'every write acknowledged before the backup began is in it',
    )
    const audit = copy.prepare("SELECT count(*) FROM audit_log WHERE resource = 'ward-occupants'").pluck().get()
    t.equal(audit, ids.size, 'audit entries and records agree: no half-applied change')
    t.same(
      readdirSync(backups).filter((name) => name.endsWith('.partial')),
      [],
      'no temporary file left',
    )

    // The details of the checks are for an admin (docs/API.md).
    const health = await app.inject({ url: '/health', headers: bearer(tokens.admin) })
    t.equal(health.statusCode, 200)
    t.equal(health.json().backups.lastAt, newest?.at)
    t.ok(health.json().backups.ageMs >= 0, 'the age of the last good backup')
  },
)

t.test('a failing backup is logged at error once per episode and shown on /health, which stays 200', async (t) => {
  const dir = t.testdir()
  const backups = join(dir, 'not-there')
  const { app, lines, token } = await buildLoggedApp(t, { DATABASE_PATH: join(dir, 'ward.db'), BACKUP_DIR: backups })
  const admin = { headers: bearer(token('admin-1', 'admin')) }
  await until(() => app.backups.status()?.failing !== null)
  await app.backups.runNow()
  await app.backups.runNow()
  const errors = lines.filter((line) => line.level === 50 && /scheduled backup/.test(String(line.msg)))
  t.equal(errors.length, 1, 'one error line for three failures')
  let health = await app.inject({ url: '/health', ...admin })
  t.equal(health.statusCode, 200, 'the ward works')
  t.match(health.json().backups.failing, { since: Number, message: /ENOENT|no such file/ })
  t.notOk('lastAt' in health.json().backups, 'no good backup yet')

  mkdirSync(backups)
  await app.backups.runNow()
  health = await app.inject({ url: '/health', ...admin })
  t.notOk('failing' in health.json().backups, 'the episode is over')
  t.ok(lines.some((line) => line.msg === 'scheduled backups work again'))
})

t.test('only the newest BACKUP_KEEP backups are kept, by their time; other files are never touched', async (t) => {
  const root = t.testdir({ backups: { 'notes.txt': 'keep me', 'facility-20260101T0000000Z.db.bak': 'x' } })
  const dir = join(root, 'backups')
  const db = openDatabase(join(root, 'ward.db'))
  t.teardown(() => db.close())
  const times = [Date.parse('2026-11-01'), Date.parse('2026-11-02'), Date.parse('2026-11-03')]
  const made = []
  for (const at of times) made.push(await backupDatedAt(db, dir, at))
  t.same(pruneBackups(dir, 2), [made[0]?.file], 'the oldest goes')
  t.same(readdirSync(dir).sort(), [
    'facility-20260101T0000000Z.db.bak',
    basename(made[1]?.file as string),
    basename(made[2]?.file as string),
    'notes.txt',
  ])
})

t.test('backup verify: ok for a sound copy, a clear refusal for a damaged or foreign file', async (t) => {
  const dir = t.testdir({ 'foreign.db': '' })
  const database = join(dir, 'ward.db')
  const { app } = await buildTestApp(t, { DATABASE_PATH: database, BACKUP_DIR: dir })
  await until(() => app.backups.status()?.last !== null)
  const good = app.backups.status()?.last?.file as string
  let io = capture()
  t.equal(await runCli(['backup', 'verify', good], io), 0)
  t.same(io.stdout, [`${good}: ok`])

  const foreign = join(dir, 'foreign.db')
  new BetterSqlite3(foreign).exec('CREATE TABLE x (y)').close()
  io = capture()
  t.equal(await runCli(['backup', 'verify', foreign], io), 1)
  t.match(io.stderr.join('\n'), /not a sound backup: not a facility-service database/)

  const damaged = join(dir, 'damaged.db')
  const bytes = readFileSync(good)
  bytes.fill(0x5a, 4096, 8192) // a page of the copy overwritten
  writeFileSync(damaged, bytes)
  io = capture()
  t.equal(await runCli(['backup', 'verify', damaged], io), 1)
  t.match(io.stderr.join('\n'), /not a sound backup/)

  io = capture()
  t.equal(await runCli(['backup', 'verify', join(dir, 'missing.db')], io), 1)
  t.match(io.stderr.join('\n'), /does not exist/)
})
