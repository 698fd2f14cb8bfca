import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { ackOf, openSender, type Sender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { type ServerProcess, startServer, stopServer } from './server-process.js'

// `npm run crash-test` runs more rounds; the regular suite leaves this file to that script.
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3)

function hl7Port(server: ServerProcess): number {
  const match = /"port":(\d+)[^\n]*ADT feed listening/.exec(server.output())
  if (!match) throw new Error(`no ADT listener in the log: ${server.output()}`)
  return Number(match[1])
}

/**
 * kill -9 the moment an AA arrives: AA is sent only once the change is committed and durable, so
 * every message acknowledged before the kill is in the file, and a resend of it after the restart
 * gets the stored ACK, never a second admission.
 */
t.test(`every ADT message acknowledged AA survives SIGKILL right after its ACK (${ROUNDS} rounds)`, async (t) => {
  const path = join(t.testdir(), 'hl7-crash.db')
  const acknowledged: { control: string; encounter: string; ack: string }[] = []
  let n = 0
  for (let r = 0; r < ROUNDS; r++) {
    const server = await startServer({ DATABASE_PATH: path, HL7_PORT: '0' })
    const sender: Sender = await openSender(hl7Port(server))
    // A few answered normally, then the kill lands right after one more AA, with no pause between.
    const before = 5 + Math.floor(Math.random() * 20)
    for (let i = 0; i <= before; i++) {
      n++
      const control = `K${n}`
      const encounter = `E${n}`
      const ack = await sender.send(adt({ event: 'A01', control, encounter, bed: `B${n}` }))
      if (i === before) server.child.kill('SIGKILL')
      t.equal(ackOf(ack).code, 'AA')
      acknowledged.push({ control, encounter, ack })
    }
    await stopServer(server, 'SIGKILL')
    await sender.close().catch(() => {})
  }

  const file = new BetterSqlite3(path, { readonly: true })
  t.equal(file.pragma('integrity_check', { simple: true }), 'ok')
  const stored = new Set(file.prepare('SELECT encounter FROM ward_occupants').pluck().all() as string[])
  const logged = new Set(file.prepare('SELECT control_id FROM hl7_messages').pluck().all() as string[])
  file.close()
  t.same(
    acknowledged.filter((a) => !stored.has(a.encounter) || !logged.has(a.control)).map((a) => a.control),
    [],
    `all ${acknowledged.length} acknowledged admissions and their log rows are in the file`,
  )

  // The last one before a kill, sent again after a restart: the stored ACK, still one admission.
  const last = acknowledged.at(-1) as (typeof acknowledged)[number]
  const server = await startServer({ DATABASE_PATH: path, HL7_PORT: '0' })
  t.teardown(() => stopServer(server))
  const sender = await openSender(hl7Port(server))
  t.teardown(() => sender.close())
  const n2 = Number(last.control.slice(1))
  t.equal(
    await sender.send(adt({ event: 'A01', control: last.control, encounter: last.encounter, bed: `B${n2}` })),
    last.ack,
  )
  const check = new BetterSqlite3(path, { readonly: true })
  t.equal(check.prepare('SELECT count(*) FROM ward_occupants WHERE encounter = ?').pluck().get(last.encounter), 1)
  check.close()
})
