import fc from 'fast-check'
import { test } from 'tap'
import { buildTestApp } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { ackOf, openSender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'

/**
 * Drawn sequences of A01/A02/A03/A08/A11/A12/A13 over a few encounters and beds, some sent late
 * (an event time before the last one applied), through a real MLLP client, checked against a
 * small ward model of our own: which encounter lies in which bed, how many stays each has, and
 * which messages were parked.
 */
const EVENTS = ['A01', 'A02', 'A03', 'A08', 'A11', 'A12', 'A13'] as const
type Event = (typeof EVENTS)[number]
interface Drawn {
  event: Event
  encounter: number
  bed: number
  /** Minutes before the previous message's time (0: in order). */
  late: number
}

interface Stay {
  seq: number
  encounter: number
  bed: number
  at: number
  active: boolean
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
    return this.stays.find((s) => s.active && s.bed === bed)
  }
  private admit(encounter: number, bed: number, at: number): void {
    this.stays.push({ seq: this.seq++, encounter, bed, at, active: true })
  }
  private move(current: Stay, bed: number, at: number): boolean {
    if (current.bed === bed) return true
    if (this.holder(bed)) return false
    current.active = false
    this.admit(current.encounter, bed, at)
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
    const active = mine.find((s) => s.active)
    switch (m.event) {
      case 'A01':
        if (active || this.holder(m.bed)) return false
        this.admit(m.encounter, m.bed, at)
        return true
      case 'A02':
      case 'A08':
        return active ? this.move(active, m.bed, at) : false
      case 'A03':
        if (!active) return false
        active.active = false
        return true
      case 'A11':
        if (!active || mine.length > 1) return false
        this.stays = this.stays.filter((s) => s !== active)
        return true
      case 'A12': {
        const previous = active && mine.find((s) => s !== active && !s.active)
        if (!active || !previous) return false
        const other = this.holder(previous.bed)
        if (other && other !== active) return false
        this.stays = this.stays.filter((s) => s !== active)
        previous.active = true
        return true
      }
      case 'A13': {
        const newest = mine[0]
        if (active || !newest) return false
        if (this.holder(newest.bed)) return false
        newest.active = true
        return true
      }
    }
  }
}

const drawn = fc.record({
  event: fc.constantFrom(...EVENTS),
  encounter: fc.integer({ min: 1, max: 3 }),
  bed: fc.integer({ min: 1, max: 3 }),
  late: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 90 }) }),
})

test('the ward after any drawn ADT sequence is what the model says', async (t) => {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC', HL7_A08_TRANSFERS: true })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  let run = 0
  let parkedSeen = 0
  await fc.assert(
    fc.asyncProperty(fc.array(drawn, { minLength: 1, maxLength: 25 }), async (sequence) => {
      run++
      // Each run a facility and encounters of its own, in the one app.
      const facility = `R${run}`
      const model = new WardModel()
      const expected: string[] = []
      const statuses: string[] = []
      let clock = Date.UTC(2026, 0, 1)
      for (const [i, m] of sequence.entries()) {
        clock += 60_000
        const at = clock - m.late * 60_000
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
            }),
          ),
        )
        if (ack.code !== 'AA') throw new Error(`${m.event}: ${ack.code} ${ack.text}`)
        statuses.push(ack.text.startsWith('parked') ? 'parked' : 'applied')
      }
      parkedSeen += statuses.filter((s) => s === 'parked').length
      const actual = (await occupants(app, tokens.admin, `&facility=${facility}`)).map((o) => ({
        encounter: Number(o.encounter.split('-E')[1]),
        bed: Number(o.bed.slice(1)),
        active: o.dischargedAt === undefined,
      }))
      const model_ = model.stays.map((s) => ({ encounter: s.encounter, bed: s.bed, active: s.active }))
      const key = (s: { encounter: number; bed: number; active: boolean }) => `${s.encounter}/${s.bed}/${s.active}`
      t.same(statuses, expected, `run ${run}: applied or parked, message by message`)
      t.same(actual.map(key).sort(), model_.map(key).sort(), `run ${run}: the stays`)
    }),
    { numRuns: propertyRuns(40), ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}) },
  )
  t.ok(parkedSeen > 0, 'some messages were parked: the property reached the parking paths')
})
