import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import type { CliIo } from '../../cli/io.js'
import { runCli } from '../../cli/run.js'
import { defaultConfig } from '../../config.js'
import { bearer, buildTestApp } from '../helper.js'

const quiet: CliIo = { out: () => {}, err: () => {} }

t.test('an online backup taken during writes is one consistent moment, and writes go on meanwhile', async (t) => {
  const dir = t.testdir()
  const live = join(dir, 'live.db')
  const copy = join(dir, 'copy.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: live })
  // Some megabytes of earlier records, so that the copy takes long enough for writes to land meanwhile.
  const pad = app.db.prepare(
    `INSERT INTO ward_occupants (id, created_at, created_by, encounter, room, bed, occupied_at, occupied_by)
     VALUES (?, 1, 'seed', 'e', ?, ?, 1, 'p')`,
  )
  app.db.transaction(() => {
    for (let i = 0; i < 20_000; i++) pad.run(`pad${String(i).padStart(21, '0')}`, 'x'.repeat(1000), `P-${i}`)
  })()
  // One writer, one write at a time: `acknowledged` is the order in which the writes committed.
  const acknowledged: string[] = []
  let n = 0
  const admit = async () => {
    const bed = `B-${n++}`
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(tokens.write),
      payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p' },
    })
    if (res.statusCode !== 200) throw new Error(`a write failed during the backup: ${res.body}`)
    acknowledged.push(res.json().id as string)
  }
  for (let i = 0; i < 50; i++) await admit()

  let writing = true
  const writer = (async () => {
    while (writing) await admit()
  })()
  const atStart = acknowledged.length
  const out: string[] = []
  // The command-line tool as an administrator runs it: a process of its own beside the server.
  const cli = spawn(process.execPath, ['--import=tsx', 'cli.ts', '--database', live, 'backup', copy], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  cli.stdout.on('data', (chunk: Buffer) => out.push(String(chunk)))
  const [code] = await once(cli, 'exit')
  const atEnd = acknowledged.length
  writing = false
  await writer
  t.equal(code, 0)
  t.match(out.join('\n'), /backed up \d+ pages/)
  t.ok(atEnd > atStart, `${atEnd - atStart} writes were acknowledged while the backup ran`)

  // The copy, read with plain SQL: intact, and exactly the writes up to one moment.
  const check = new BetterSqlite3(copy, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok')
  const inCopy = check.prepare("SELECT id FROM ward_occupants WHERE created_by <> 'seed'").pluck().all() as string[]
  const audited = check
    .prepare("SELECT record_id FROM audit_log WHERE resource = 'ward-occupants' AND operation = 'create'")
    .pluck()
    .all() as string[]
  const padding = check.prepare("SELECT count(*) FROM ward_occupants WHERE created_by = 'seed'").pluck().get()
  check.close()
  const k = inCopy.length
  t.ok(k >= atStart, `every write acknowledged before the backup began is in the copy (${k} >= ${atStart})`)
  t.ok(k <= atEnd + 1, 'no write from after the backup ended (one committed but not yet answered at most)')
  t.same(new Set(inCopy), new Set(acknowledged.slice(0, k)), 'the copy holds a prefix of the writes, in commit order')
  t.same(
    new Set(audited),
    new Set(inCopy),
    'each record in the copy has its audit entry, and no entry is without its record',
  )
  t.equal(padding, 20_000, 'the earlier records are all there')
  t.ok(acknowledged.length > k, `writes went on past the copy's moment (${acknowledged.length - k} more)`)

  const restored = await buildApp(defaultConfig({ DATABASE_PATH: copy, LOG_LEVEL: 'silent' }))
  t.teardown(() => restored.close())
  const res = await restored.inject({ url: '/ward-occupants?$limit=0', headers: bearer(tokens.write) })
  t.equal(res.json().total, k + 20_000, 'the restored service serves the copy')
})

t.test('backup refuses to overwrite a file', async (t) => {
  const dir = t.testdir({ 'taken.db': 'x' })
  const errors: string[] = []
  const code = await runCli(['--database', join(dir, 'db.db'), 'backup', join(dir, 'taken.db')], {
    ...quiet,
    err: (l) => errors.push(l),
  })
  t.equal(code, 1)
  t.match(errors.join('\n'), /exists already/)
})
