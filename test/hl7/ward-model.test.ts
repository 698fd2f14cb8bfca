import fc from 'fast-check'
import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

/**
 * Drawn sequences of A01/A02/A03/A08/A11/A12/A13 over a few encounters, beds, patients and
 * providers, some sent late (an event time before the last one applied) and some at the very time
 * of the message before, through a real MLLP client, checked against a small ward model of our
 * own: every stay (encounter, bed, patient, provider, when it began and ended) and which messages
 * were parked.
 */
const EVENTS = ['A01', 'A02', 'A03', 'A08', 'A11', 'A12', 'A13'] as const
type Event = (typeof EVENTS)[number]
interface Drawn {
  event: Event
  encounter: number
  bed: number
  /** PID-3: 0 empty (an A01 then names patient 1, it needs one). */
  patient: number
  /** PV1-7: 0 empty. */
  provider: number
  /** Minutes before the previous message's time (0: in order); `same`: at the previous message's time. */
  late: number
  same: boolean
}

interface Stay {
  seq: number
  encounter: number
  bed: number
  patient: string
  provider: string | null
  at: number
  dischargedAt: number | null
}

/** The ward as the rules describe it; returns whether the message changed (or would change) the ward, or parks. */
class WardModel {
  stays: Stay[] = []
  lastApplied = new Map<number, number>()
  private seq = 0

  private staysOf(encounter: number): Stay[] {
    // Newest first: by time, then by creation.
    return this.stays.filter((s) => s.encounter === encounter).sort((a, b) => b.at - a.at || b.seq - a.seq)
  }
  private holder(bed: number): Stay | undefined {
    return this.stays.find((s) => s.dischargedAt === null && s.bed === bed)
  }
  private admit(m: Drawn, bed: number, at: number, patient: string, provider: string | null): void {
    this.stays.push({ seq: this.seq++, encounter: m.encounter, bed, patient, provider, at, dischargedAt: null })
  }
  /** A02, and an A08 to another bed: the stay ends, a new one begins with what the message names, else the old one's. */
  private move(m: Drawn, current: Stay, at: number): boolean {
    if (current.bed === m.bed) return true
    if (this.holder(m.bed)) return false
    current.dischargedAt = at
    this.admit(m, m.bed, at, patientOf(m) ?? current.patient, providerOf(m) ?? current.provider)
    return true
  }

  apply(m: Drawn, at: number): 'applied' | 'parked' {
    const last = this.lastApplied.get(m.encounter)
    if (last !== undefined && at < last) return 'parked'
    const ok = this.decide(m, at)
    if (ok) this.lastApplied.set(m.encounter, at)
    return ok ? 'applied' : 'parked'
  }

  private decide(m: Drawn, at: number): boolean {
    const mine = this.staysOf(m.encounter)
    const active = mine.find((s) => s.dischargedAt === null)
    switch (m.event) {
      case 'A01':
        if (active || this.holder(m.bed)) return false
        this.admit(m, m.bed, at, patientOf(m) ?? 'P1', providerOf(m))
        return true
      case 'A02':
        return active ? this.move(m, active, at) : false
      case 'A08': {
        if (!active) return false
        if (active.bed !== m.bed) return this.move(m, active, at)
        active.provider = providerOf(m) ?? active.provider
        return true
      }
      case 'A03':
        if (!active) return false
        active.dischargedAt = at
        return true
      case 'A11':
        if (!active || mine.length > 1) return false
        this.stays = this.stays.filter((s) => s !== active)
        return true
      case 'A12': {
        const previous = active && mine.find((s) => s !== active && s.dischargedAt !== null)
        if (!active || !previous) return false
        const other = this.holder(previous.bed)
        if (other && other !== active) return false
        this.stays = this.stays.filter((s) => s !== active)
        previous.dischargedAt = null
        return true
      }
      case 'A13': {
        const newest = mine[0]
        if (active || !newest) return false
        if (this.holder(newest.bed)) return false
        newest.dischargedAt = null
        return true
      }
    }
  }
}

const patientOf = (m: Drawn): string | null => (m.patient === 0 ? null : `P${m.patient}`)
const providerOf = (m: Drawn): string | null => (m.provider === 0 ? null : `D${m.provider}`)

const drawn = fc.record({
  event: fc.constantFrom(...EVENTS),
  encounter: fc.integer({ min: 1, max: 3 }),
  bed: fc.integer({ min: 1, max: 3 }),
  patient: fc.integer({ min: 0, max: 2 }),
  provider: fc.integer({ min: 0, max: 2 }),
  late: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 90 }) }),
  same: fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
})

/** A stay as one comparable line: encounter, bed, patient, provider, begun, ended. */
const line = (s: {
  encounter: number
  bed: number
  patient: string
  provider: string | null
  at: number
  end: number | null
}) =>
  `E${s.encounter} B${s.bed} ${s.patient} ${s.provider ?? '-'} ${new Date(s.at).toISOString()} ${s.end === null ? 'active' : new Date(s.end).toISOString()}`

test('the ward after any drawn ADT sequence is what the model says', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC', HL7_A08_TRANSFERS: true })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  let run = 0
  let parkedSeen = 0
  let sameSeen = 0
  await fc.assert(
    fc.asyncProperty(fc.array(drawn, { minLength: 1, maxLength: 25 }), async (sequence) => {
      run++
      // Each run a facility and encounters of its own, in the one app.
      const facility = `R${run}`
      const model = new WardModel()
      const expected: string[] = []
      const statuses: string[] = []
      let clock = Date.UTC(2026, 0, 1)
      let previous = clock
      for (const [i, m] of sequence.entries()) {
        clock += 60_000
        const at = m.same ? previous : clock - m.late * 60_000
        previous = at
        sameSeen += m.same && i > 0 ? 1 : 0
        expected.push(model.apply(m, at))
        const stamp = new Date(at).toISOString().replace(/[-:T]/g, '').slice(0, 12)
        const ack = ackOf(
          await sender.send(
            adt({
              event: m.event,
              control: `${facility}-${i}`,
              encounter: `${facility}-E${m.encounter}`,
              bed: `B${m.bed}`,
              facility,
              at: stamp,
              ...(m.patient === 0 && m.event !== 'A01' ? { pid3: '' } : { patient: patientOf(m) ?? 'P1' }),
              ...(m.provider === 0 ? {} : { provider: providerOf(m) as string }),
            }),
          ),
        )
        if (ack.code !== 'AA') throw new Error(`${m.event}: ${ack.code} ${ack.text}`)
        statuses.push(ack.text.startsWith('parked') ? 'parked' : 'applied')
      }
      parkedSeen += statuses.filter((s) => s === 'parked').length
      const actual = (await occupants(app, tokens.admin, `&facility=${facility}`)).map((o) =>
        line({
          encounter: Number(o.encounter.split('-E')[1]),
          bed: Number(o.bed.slice(1)),
          patient: o.occupiedBy,
          provider: o.provider ?? null,
          at: o.occupiedAt,
          end: o.dischargedAt ?? null,
        }),
      )
      const modelled = model.stays.map((s) => line({ ...s, end: s.dischargedAt }))
      t.same(statuses, expected, `run ${run}: applied or parked, message by message`)
      t.same(actual.sort(), modelled.sort(), `run ${run}: the stays, with patient, provider and times`)
    }),
    { numRuns: propertyRuns(40), ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}) },
  )
  t.ok(parkedSeen > 0, 'some messages were parked: the property reached the parking paths')
  t.ok(sameSeen > 0, 'some messages came at the time of the one before')
})
