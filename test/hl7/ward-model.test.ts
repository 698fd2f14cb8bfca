import fc from 'fast-check'
import { test } from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { ackOf, openSender, type Sender } from './client.js'
import { adt } from './messages.js'
import { occupants } from './ward.js'
import { type BedView, MODEL_EVENTS, type ModelEvent, type ModelMessage, TABLE_0116, WardModel } from './ward-model.js'

/**
 * Model-based: fast-check draws commands, each an ADT event. Most are aimed at the ward as the
 * model has it (an A12 at a visit with a transfer to cancel, an A17 at two patients in bed ...),
 * so that every path is reached, not only the parking ones; the rest are drawn blind and mostly
 * park. Each is sent through a real MLLP client; its ACK must say what the model says; after each
 * applied message and each run every bed's state on GET /beds (state word, housekeeping, expected
 * encounter, on-leave and discharge-expected marks) must be the model's, after each run the stays
 * (visit, bed, patient, doctor, times) too, and a parked bed event's park code. The run set fails
 * unless every event was applied at least FLOOR times, and each cancel after more than one earlier
 * stay (where cancelling the wrong stay shows).
 *
 * Times are real: a run's clock starts 90 min 30 s before it starts, a minute a message, and
 * BED_EXPECTED_HOURS is 1, so the expectations of its first 30 minutes have run out when GET /beds
 * reads them and the later ones have not, with 30 s to spare either side.
 */
const BEDS = [1, 2, 3, 4]
/** A bed no message but a blind A20 names: never a bed of the ward. */
const UNKNOWN_BED = 5
const EXPECTED_HOURS = 1
const STATUSES = ['C', 'H', 'K', 'I', 'O', 'U'] as const
const RUNS = propertyRuns(24)
/**
 * How often each path must have been reached: once at the default runs. The rarest (an A22 applied,
 * an A25) come 3-10 times in 24 runs, and a floor of 2 could fail by chance.
 */
const FLOOR = Math.max(1, Math.round(RUNS / 24))
const MINUTE = 60_000

interface Draw {
  event: ModelEvent
  /** Aimed at a target the model has (a precondition); else drawn blind. */
  aimed: boolean
  pick: number
  pick2: number
  bed: number
  /** Minutes before the clock (0: in order). */
  late: number
  provider: number | null
  /** PV1-45 this many minutes before the event (0: none). */
  left: number
  /** A17: PV1-3 names each patient's bed (true) or the bed each goes to. A15: PV2-1 names the pending bed. */
  currentBeds: boolean
  /** A20: NPU-2. */
  status: (typeof STATUSES)[number]
}

type Skeleton = Omit<ModelMessage, 'at' | 'left'>
const nth = <T>(items: T[], i: number): T | undefined => (items.length === 0 ? undefined : items[i % items.length])
const doctor = (d: Draw) => (d.provider === null ? null : `DR${d.provider}`)

/** The message a command sends, aimed at the model's ward, or null when it has no target now. */
function aimed(m: WardModel, d: Draw, fresh: () => string): Skeleton | null {
  const slots = m.visits.map((encounter, i) => ({ encounter, patient: m.patients[i] as string }))
  const active = slots.filter((s) => m.activeOf(s.encounter))
  const idle = slots.filter((s) => !m.activeOf(s.encounter))
  const free = BEDS.filter((b) => !m.holder(b))
  const base = (s: { encounter: string; patient: string }, bed: number | null): Skeleton => ({
    event: d.event,
    encounter: s.encounter,
    patient: s.patient,
    bed,
    provider: doctor(d),
  })
  const deepest = <T extends { encounter: string }>(list: T[]) => {
    const deep = list.filter((s) => m.staysOf(s.encounter).length > 2)
    return nth(deep.length > 0 ? deep : list, d.pick)
  }
  switch (d.event) {
    case 'A01':
    case 'A06': {
      const s = nth(idle, d.pick)
      const bed = nth(free, d.pick2)
      return s && bed ? base(s, bed) : null
    }
    case 'A02':
    case 'A08': {
      // Half of them pile stays on one visit: an A12 after several transfers needs them.
      const s =
        d.pick % 2 === 0
          ? (deepest(active.filter((v) => m.staysOf(v.encounter).length > 1)) ?? nth(active, d.pick))
          : nth(active, d.pick)
      const current = s && (m.activeOf(s.encounter)?.bed as number)
      const bed = nth(d.event === 'A08' ? [current as number, ...free] : free, d.pick2)
      return s && bed ? base(s, bed) : null
    }
    case 'A03':
    case 'A07': {
      const s = nth(active, d.pick)
      return s ? base(s, null) : null
    }
    case 'A11': {
      const s = nth(
        active.filter((v) => m.staysOf(v.encounter).length === 1),
        d.pick,
      )
      return s ? base(s, null) : null
    }
    case 'A12': {
      const s = deepest(
        active.filter((v) => {
          const [now, previous] = m.staysOf(v.encounter).filter((x, i) => i === 0 || x.dischargedAt !== null)
          return previous !== undefined && (previous.bed === now?.bed || !m.holder(previous.bed))
        }),
      )
      return s ? base(s, null) : null
    }
    case 'A13': {
      const s = deepest(
        idle.filter((v) => {
          const newest = m.staysOf(v.encounter)[0]
          return newest !== undefined && !m.holder(newest.bed)
        }),
      )
      return s ? base(s, null) : null
    }
    case 'A54':
    case 'A55': {
      const s = nth(d.event === 'A55' ? active.filter((v) => m.doctorBefore.has(v.encounter)) : active, d.pick)
      if (!s) return null
      const restored = m.doctorBefore.get(s.encounter)
      const provider = d.event === 'A55' ? restored : `DR${d.provider ?? 0}`
      return provider ? { ...base(s, null), provider } : null
    }
    case 'A17': {
      const a = nth(active, d.pick)
      const b = nth(
        // Two slots may hold one visit since an A50 gave one the other's number.
        active.filter((v) => v.encounter !== a?.encounter),
        d.pick2,
      )
      if (!a || !b) return null
      const [bedA, bedB] = [a, b].map((v) => m.activeOf(v.encounter)?.bed as number) as [number, number]
      const swap = { encounter: b.encounter, patient: b.patient, bed: d.currentBeds ? bedB : bedA, provider: null }
      return { ...base(a, d.currentBeds ? bedA : bedB), swap }
    }
    case 'A40':
    case 'A47': {
      const from = nth([...new Set(m.stays.map((s) => s.patient))], d.pick)
      return from
        ? { event: d.event, encounter: '', patient: fresh(), bed: null, provider: null, mergeFrom: from }
        : null
    }
    case 'A50': {
      const s = nth(
        slots.filter((v) => m.staysOf(v.encounter).length > 0),
        d.pick,
      )
      return s ? { ...base(s, null), encounter: fresh().replace('-M', '-V'), previousEncounter: s.encounter } : null
    }
    default:
      return aimedAtBeds(m, d, { slots, active, idle })
  }
}

type Slot = { encounter: string; patient: string }

/** The bed events, aimed: a cancel at a visit with something to cancel, an A20 at a bed of the ward. */
function aimedAtBeds(m: WardModel, d: Draw, v: { slots: Slot[]; active: Slot[]; idle: Slot[] }): Skeleton | null {
  const base = (s: Slot | undefined, bed: number | null): Skeleton | null =>
    s ? { event: d.event, encounter: s.encounter, patient: s.patient, bed, provider: null } : null
  const stay = (s: Slot) => m.activeOf(s.encounter)
  const expecting = (kind: string) =>
    v.slots.filter((s) => m.expectationsOf(s.encounter).some(([, e]) => e.kind === kind))
  switch (d.event) {
    case 'A14':
      return base(nth(v.idle, d.pick), nth(BEDS, d.pick2) as number)
    case 'A27':
      return base(nth(expecting('admission'), d.pick), null)
    case 'A26':
      return base(nth(expecting('transfer'), d.pick), null)
    case 'A15': {
      const s = nth(v.active, d.pick)
      const current = s && (stay(s)?.bed as number)
      const bed = nth(
        BEDS.filter((b) => b !== current),
        d.pick2,
      )
      if (!s || bed === undefined) return null
      // PV2-1 names the pending bed beside the current one in PV1-3, or PV1-3 alone names it.
      return d.currentBeds ? { ...(base(s, current as number) as Skeleton), pending: bed } : base(s, bed)
    }
    case 'A16':
    case 'A21':
    case 'A53':
      return base(nth(d.event === 'A16' ? v.active : v.active.filter((s) => stay(s)?.onLeave === null), d.pick), null)
    case 'A25':
      return base(
        nth(
          v.active.filter((s) => stay(s)?.dischargeExpected !== null),
          d.pick,
        ),
        null,
      )
    case 'A22':
    case 'A52':
      return base(
        nth(
          v.active.filter((s) => stay(s)?.onLeave !== null),
          d.pick,
        ),
        null,
      )
    case 'A20': {
      // An O or a U mostly at a bed it clears (a state set, and for a U no patient in it); a state
      // mostly at an empty bed (cleaning after a discharge), which a U may clear later.
      const known = BEDS.filter((b) => m.knownBed(b))
      const clears = known.filter(
        (b) => m.housekeeping.has(b) && (d.status === 'O' || (d.status === 'U' && !m.holder(b))),
      )
      const empty = known.filter((b) => !m.holder(b))
      const preferred = TABLE_0116[d.status] === null ? clears : empty
      const bed = nth(preferred.length > 0 && d.pick % 4 !== 0 ? preferred : known, d.pick2)
      return bed === undefined
        ? null
        : { event: 'A20', encounter: '', patient: '', bed, provider: null, status: d.status }
    }
    default:
      return null
  }
}

/** A message drawn blind: any visit, any bed; it parks more often than not. */
function blind(m: WardModel, d: Draw, fresh: () => string): Skeleton {
  const i = d.pick % 3
  const s = { event: d.event, encounter: m.visits[i] as string, patient: m.patients[i] as string }
  const provider = doctor(d) ?? (d.event === 'A54' || d.event === 'A55' ? 'DR0' : null)
  switch (d.event) {
    case 'A17': {
      const j = (i + 1 + (d.pick2 % 2)) % 3
      // The same visit twice is an AR, not a ward question: another (unknown) visit then.
      const encounter = m.visits[j] === s.encounter ? `${s.encounter}y` : (m.visits[j] as string)
      const other = { encounter, patient: m.patients[j] as string, provider: null }
      return { ...s, bed: d.bed, provider, swap: { ...other, bed: BEDS[d.pick2 % BEDS.length] as number } }
    }
    case 'A40':
    case 'A47':
      return { ...s, encounter: '', patient: fresh(), bed: null, provider: null, mergeFrom: `${s.patient}x` }
    case 'A50':
      // An unknown old number, or a new one another visit holds.
      return d.pick2 % 2 === 0 || m.visits[(i + 1) % 3] === s.encounter
        ? { ...s, encounter: fresh().replace('-M', '-V'), bed: null, provider, previousEncounter: `${s.encounter}x` }
        : { ...s, encounter: m.visits[(i + 1) % 3] as string, bed: null, provider, previousEncounter: s.encounter }
    case 'A20':
      return {
        ...s,
        encounter: '',
        patient: '',
        bed: d.pick2 % 5 === 4 ? UNKNOWN_BED : d.bed,
        provider: null,
        status: d.status,
      }
    default:
      return { ...s, bed: d.bed, provider }
  }
}

interface Real {
  sender: Sender
  facility: string
  clock: number
  sent: number
  fresh: number
  tally: Map<string, number>
  /** Control id -> the park code the model gives a bed event it parks (the others' it leaves unsaid). */
  codes: Map<string, string>
  /** Throws unless GET /beds shows the model's beds (`after`: what was just sent). */
  beds: (m: WardModel, after: string) => Promise<void>
}

const stamp = (at: number) => new Date(at).toISOString().replace(/[-:T]/g, '').slice(0, 14)
const count = (tally: Map<string, number>, key: string) => tally.set(key, (tally.get(key) ?? 0) + 1)

/** An A20: MSH, EVN and NPU (bed location, bed status); no patient, no visit. */
function a20(r: Real, m: ModelMessage): string {
  return [
    `MSH|^~\\&|HIS|GENERAL|WARD|FS|${stamp(m.at)}||ADT^A20^ADT_A20|${r.facility}-${r.sent}|P|2.5.1`,
    `EVN|A20|${stamp(m.at)}`,
    `NPU|W1^^B${m.bed}^${r.facility}|${m.status}`,
  ].join('\r')
}

function hl7(r: Real, m: ModelMessage): string {
  if (m.event === 'A20') return a20(r, m)
  const text = adtText(r, m)
  return m.pending === undefined ? text : `${text}\rPV2|W1^^B${m.pending}^${r.facility}`
}

function adtText(r: Real, m: ModelMessage): string {
  const merge = m.event === 'A40' || m.event === 'A47'
  return adt({
    event: m.event,
    control: `${r.facility}-${r.sent}`,
    encounter: m.encounter === '' ? undefined : m.encounter,
    patient: m.patient,
    facility: r.facility,
    ...(m.bed === null ? {} : { bed: `B${m.bed}` }),
    ...(m.provider === null ? {} : { provider: m.provider }),
    at: stamp(m.at),
    ...(m.left === null ? {} : { dischargedAt: stamp(m.left) }),
    ...(m.swap ? { swap: { ...m.swap, bed: `B${m.swap.bed}`, provider: m.swap.provider ?? undefined } } : {}),
    ...(merge ? { mrg: { patient: m.mergeFrom } } : {}),
    ...(m.event === 'A50' ? { mrg: { visit: m.previousEncounter } } : {}),
  })
}

class Send implements fc.AsyncCommand<WardModel, Real> {
  constructor(readonly d: Draw) {}
  // Only a fresh name needs the real side's counter: the target is read from the model alone.
  check(m: Readonly<WardModel>): boolean {
    return !this.d.aimed || aimed(m as WardModel, this.d, () => 'check') !== null
  }
  async run(m: WardModel, r: Real): Promise<void> {
    const fresh = () => `${r.facility}-M${r.fresh++}`
    const skeleton = (this.d.aimed ? aimed(m, this.d, fresh) : null) ?? blind(m, this.d, fresh)
    r.clock += MINUTE
    r.sent++
    const at = r.clock - this.d.late * MINUTE
    const message: ModelMessage = { ...skeleton, at, left: this.d.left > 0 ? at - this.d.left * MINUTE : null }
    const clears = message.event === 'A20' && TABLE_0116[message.status as string] === null
    const cleared = clears && m.housekeeping.has(message.bed as number)
    const expected = m.apply(message)
    const ack = ackOf(await r.sender.send(hl7(r, message)))
    if (ack.code !== 'AA') throw new Error(`${message.event}: ${ack.code} ${ack.text}`)
    const status = ack.text.startsWith('parked') ? 'parked' : 'applied'
    if (status !== expected.status)
      throw new Error(`${JSON.stringify(message)}: the model says ${expected.status}, the ward ${ack.text}`)
    count(r.tally, `${message.event} ${status}`)
    // Every change, not only the run's last state: a mark or an expectation left behind may end
    // with its stay before the run does.
    if (status === 'applied') await r.beds(m, JSON.stringify(message))
    if (cleared && status === 'applied') count(r.tally, `A20 ${message.status} cleared a state`)
    if (expected.code !== null) {
      r.codes.set(`${r.facility}-${r.sent}`, expected.code)
      count(r.tally, `${message.event} parked ${expected.code}`)
    }
    if (expected.deepCancel) count(r.tally, `${message.event} after more than one earlier stay`)
  }
  toString(): string {
    return JSON.stringify(this.d)
  }
}

/** Transfers and cancels weigh more: a cancel after several stays needs the stays first. */
const WEIGHTS: Record<ModelEvent, number> = {
  A01: 3,
  A02: 4,
  A03: 2,
  A08: 2,
  A11: 2,
  A12: 4,
  A13: 5,
  A06: 2,
  A07: 2,
  A17: 3,
  A40: 2,
  A47: 1,
  A50: 2,
  A54: 2,
  A55: 3,
  A14: 2,
  A27: 2,
  A15: 4,
  A26: 3,
  A16: 3,
  A25: 5,
  A21: 4,
  A22: 4,
  A52: 4,
  A53: 1,
  A20: 6,
}
const draw: fc.Arbitrary<Draw> = fc.record({
  event: fc.oneof(...MODEL_EVENTS.map((e) => ({ weight: WEIGHTS[e], arbitrary: fc.constant(e) }))),
  aimed: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  pick: fc.nat(11),
  pick2: fc.nat(11),
  bed: fc.constantFrom(...BEDS),
  late: fc.oneof({ weight: 12, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 90 }) }),
  provider: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 2 }),
  left: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 30 }) }),
  currentBeds: fc.boolean(),
  // A U clears only an empty bed's state: drawn more often, so that it meets one.
  status: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...STATUSES) },
    { weight: 1, arbitrary: fc.constant('U' as const) },
  ),
})
const commands = fc.commands([draw.map((d) => new Send(d))], { maxCommands: 120, size: 'max' })

const bedKey = (bed: string, v: BedView) => JSON.stringify({ bed, ...v })

/** Every bed GET /beds lists for the facility, its state fields read as the model keeps them. */
async function bedsOf(app: TestApp, token: string, facility: string): Promise<string[]> {
  const res = await app.inject({ url: `/beds?facility=${facility}`, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(`GET /beds: ${res.statusCode} ${res.body}`)
  type Mark = { wardOccupantId: string; since: number }
  const beds: {
    bed: string
    active: { id: string; encounter: string }[]
    state: string
    housekeeping?: { state: string; since: number; setBy: string }
    expected?: BedView['expected']
    onLeave?: Mark[]
    dischargeExpected?: Mark[]
  }[] = res.json().beds
  return beds.map((b) => {
    const encounterOf = (id: string) => b.active.find((o) => o.id === id)?.encounter ?? `not active: ${id}`
    const marks = (list: Mark[] | undefined) =>
      (list ?? []).map((m) => ({ encounter: encounterOf(m.wardOccupantId), since: m.since }))
    if (b.housekeeping && b.housekeeping.setBy !== 'hl7:HIS')
      throw new Error(`${b.bed}: set by ${b.housekeeping.setBy}`)
    return bedKey(b.bed, {
      state: b.state,
      housekeeping: b.housekeeping ? { state: b.housekeeping.state, since: b.housekeeping.since } : null,
      expected: b.expected ?? null,
      onLeave: marks(b.onLeave),
      dischargeExpected: marks(b.dischargeExpected),
    })
  })
}

/** The park code of each of the run's parked messages (all of them are among the newest 200). */
async function parkCodes(app: TestApp, token: string, facility: string): Promise<Map<string, string>> {
  const res = await app.inject({ url: '/hl7/messages?status=parked&$limit=200', headers: bearer(token) })
  const list: { controlId?: string; facility?: string; parkCode?: string }[] = res.json().hl7Messages
  return new Map(list.filter((m) => m.facility === facility).map((m) => [m.controlId ?? '', m.parkCode ?? '']))
}

test('the ward after any drawn ADT sequence is what the model says, and every path was reached', async (t) => {
  const { app, tokens } = await buildTestApp(t, {
    HL7_PORT: 0,
    HL7_TIMEZONE: 'UTC',
    HL7_A08_TRANSFERS: true,
    BED_EXPECTED_HOURS: EXPECTED_HOURS,
  })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  const tally = new Map<string, number>()
  let run = 0
  let sent = 0
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      run++
      // Each run a facility and visits of its own, in the one app.
      const facility = `R${run}`
      const now = Math.floor(Date.now() / 1000) * 1000
      const model = new WardModel(facility, EXPECTED_HOURS, now)
      const clock = now - 90 * MINUTE - 30_000
      const beds = async (m: WardModel, after: string) => {
        const shown = await bedsOf(app, tokens.admin, facility)
        const modelBeds = m.shownBeds().map((b) => bedKey(`B${b}`, m.view(b)))
        if (JSON.stringify(shown) !== JSON.stringify(modelBeds))
          throw new Error(
            `run ${run}, after ${after}: the beds\nward:  ${shown.join('\n       ')}\nmodel: ${modelBeds.join('\n       ')}`,
          )
      }
      const real: Real = { sender, facility, clock, sent: 0, fresh: 0, tally: new Map(), codes: new Map(), beds }
      await fc.asyncModelRun(() => ({ model, real }), cmds)
      sent += real.sent
      for (const [key, n] of real.tally) tally.set(key, (tally.get(key) ?? 0) + n)
      const key = (s: {
        encounter: string
        bed: number
        patient: string
        provider: string | null
        occupiedAt: number
        dischargedAt: number | null
      }) => [s.encounter, `B${s.bed}`, s.patient, s.provider ?? '-', s.occupiedAt, s.dischargedAt ?? 'active'].join(' ')
      const actual = (await occupants(app, tokens.admin, `&facility=${facility}`)).map((o) =>
        key({
          encounter: o.encounter,
          bed: Number(o.bed.slice(1)),
          patient: o.occupiedBy,
          provider: o.provider ?? null,
          occupiedAt: o.occupiedAt,
          dischargedAt: o.dischargedAt ?? null,
        }),
      )
      if (JSON.stringify(actual.sort()) !== JSON.stringify(model.stays.map(key).sort()))
        throw new Error(
          `run ${run}: the stays\nward:  ${actual.join('\n       ')}\nmodel: ${model.stays.map(key).sort().join('\n       ')}`,
        )
      await beds(model, 'the run')
      const codes = await parkCodes(app, tokens.admin, facility)
      for (const [control, code] of real.codes)
        if (codes.get(control) !== code)
          throw new Error(`run ${run}: ${control} parked ${codes.get(control)}, the model says ${code}`)
    }),
    { numRuns: RUNS, ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}) },
  )
  const reached = Object.fromEntries([...tally].sort())
  t.comment(`${sent} messages in ${run} runs (${(sent / run).toFixed(1)} a run): ${JSON.stringify(reached)}`)
  for (const event of MODEL_EVENTS)
    t.ok((tally.get(`${event} applied`) ?? 0) >= FLOOR, `${event} applied at least ${FLOOR} times`)
  const cleared = (tally.get('A20 O cleared a state') ?? 0) + (tally.get('A20 U cleared a state') ?? 0)
  t.ok(cleared >= FLOOR, `an A20 O or U cleared a state at least ${FLOOR} times`)
  for (const cancel of ['A12', 'A13'])
    t.ok(
      (tally.get(`${cancel} after more than one earlier stay`) ?? 0) >= FLOOR,
      `${cancel} applied after more than one earlier stay at least ${FLOOR} times`,
    )
  const parked = [...tally].filter(([k]) => k.endsWith('parked')).reduce((n, [, v]) => n + v, 0)
  t.ok(parked >= FLOOR, 'some messages were parked: the property reached the parking paths')
})
