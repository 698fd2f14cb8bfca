import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { type CliIo, runCli } from '../../cli.js'
import { defaultConfig } from '../../config.js'
import { bearer, buildTestApp } from '../helper.js'

const quiet: CliIo = { out: () => {}, err: () => {} }

t.test('an online backup taken during writes restores every record acknowledged before it began', async (t) => {
  const dir = t.testdir()
  const live = join(dir, 'live.db')
  const copy = join(dir, 'copy.db')
  const { app, tokens } = await buildTestApp(t, { DATABASE_PATH: live })
  let n = 0
  const admit = async () => {
    const bed = `B-${n++}`
    const res = await app.inject({
      method: 'POST',
      url: '/ward-occupants',
      headers: bearer(tokens.write),
      payload: { encounter: `e-${bed}`, bed, occupiedBy: 'p', room: 'x'.repeat(150) },
    })
    return res.json().id as string
  }
  for (let i = 0; i < 300; i++) await admit()
  const before = app.db.prepare('SELECT id FROM ward_occupants').pluck().all() as string[]

  let writing = true
  const writer = (async () => {
    while (writing) await admit()
  })()
  const out: string[] = []
  const code = await runCli(['--database', live, 'backup', copy], { ...quiet, out: (l) => out.push(l) })
  writing = false
  await writer
  t.equal(code, 0)
  t.match(out.join('\n'), /backed up \d+ pages/)

  const check = new BetterSqlite3(copy, { readonly: true })
  t.equal(check.pragma('integrity_check', { simple: true }), 'ok')
  check.close()

  const restored = await buildApp(defaultConfig({ DATABASE_PATH: copy, LOG_LEVEL: 'silent' }))
  t.teardown(() => restored.close())
  const res = await restored.inject({ url: '/ward-occupants?$limit=1000&$select[]=id', headers: bearer(tokens.write) })
  const ids = new Set(res.json().wardOccupants.map((r: { id: string }) => r.id))
  t.ok(
    before.every((id) => ids.has(id)),
    'every record acknowledged before the backup is in the copy',
  )
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
