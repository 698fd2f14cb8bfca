/**
 * The ward as docs/ADT.md describes it, written apart from the app (no import of its code): the
 * stays with their patient, doctor and times, the beds' states ("Bed states": housekeeping,
 * expectations, the stays' marks), and whether each ADT message applies or parks (a bed event:
 * with which park code). The model-based property test (ward-model.test.ts) checks the app against it.
 */
export const MODEL_EVENTS = [
  'A01',
  'A02',
  'A03',
  'A08',
  'A11',
  'A12',
  'A13',
  'A06',
  'A07',
  'A17',
  'A40',
  'A47',
  'A50',
  'A54',
  'A55',
  'A14',
  'A27',
  'A15',
  'A26',
  'A16',
  'A25',
  'A21',
  'A22',
  'A52',
  'A53',
  'A20',
] as const
export type ModelEvent = (typeof MODEL_EVENTS)[number]
const BED_EVENTS: ReadonlySet<ModelEvent> = new Set([
  'A14',
  'A27',
  'A15',
  'A26',
  'A16',
  'A25',
  'A21',
  'A22',
  'A52',
  'A53',
  'A20',
])

export interface Stay {
  seq: number
  encounter: string
  bed: number
  patient: string
  provider: string | null
  occupiedAt: number
  dischargedAt: number | null
  /** The stay's marks (A21, A16): since when; they end with the stay. */
  onLeave: number | null
  dischargeExpected: number | null
}

/** HL7 table 0116 as docs/ADT.md reads it: C, H, K, I set the housekeeping state, O and U clear it. */
export const TABLE_0116: Record<string, string | null> = {
  C: 'closed',
  H: 'cleaning',
  K: 'contaminated',
  I: 'isolated',
  O: null,
  U: null,
}

export interface Expectation {
  encounter: string
  kind: 'admission' | 'transfer'
  since: number
}

/** What GET /beds shows of a bed's state (the marks by their stay's encounter). */
export interface BedView {
  state: string
  housekeeping: { state: string; since: number } | null
  expected: (Expectation & { until?: number }) | null
  onLeave: { encounter: string; since: number }[]
  dischargeExpected: { encounter: string; since: number }[]
}

/** One message as the model reads it (the test writes the same fields into HL7). */
export interface ModelMessage {
  event: ModelEvent
  /** PV1-19 ('' for a merge, which names no visit). */
  encounter: string
  /** PID-3 (A40/A47: the identifier that stays). */
  patient: string
  bed: number | null
  provider: string | null
  at: number
  /** PV1-45. */
  left: number | null
  /** A17: the second group. */
  swap?: { encounter: string; patient: string; bed: number; provider: string | null }
  /** A40/A47: MRG-1. */
  mergeFrom?: string
  /** A50: MRG-5. */
  previousEncounter?: string
  /** A20: NPU-2 (NPU-1 is `bed`). */
  status?: string
  /** A15: PV2-1's bed (else PV1-3's is the pending one). */
  pending?: number
}

export interface Outcome {
  status: 'applied' | 'parked'
  /** A cancel (A12, A13) applied to an encounter with more than one earlier stay. */
  deepCancel: boolean
  /** A bed event's park code (null: applied, or an event whose code the model leaves unsaid). */
  code: string | null
}

const HOUR = 3_600_000

export class WardModel {
  stays: Stay[] = []
  lastApplied = new Map<string, number>()
  /** The test's three visits (current numbers, after A50s) and their patients (after merges). */
  visits: string[]
  patients: string[]
  /** The doctor before the last A54 of a visit, which an A55 restores. */
  doctorBefore = new Map<string, string | null>()
  /** Bed -> its housekeeping state (A20) and since when. */
  housekeeping = new Map<number, { state: string; since: number }>()
  /** Bed -> the pending admission or transfer naming it (one a bed). */
  expectations = new Map<number, Expectation>()
  private seq = 0
  private code: string | null = null

  /** `expectedHours`, `now`: BED_EXPECTED_HOURS and the time GET /beds is read at. */
  constructor(
    prefix: string,
    readonly expectedHours = 0,
    readonly now = 0,
  ) {
    this.visits = [1, 2, 3].map((i) => `${prefix}-E${i}`)
    this.patients = [1, 2, 3].map((i) => `${prefix}-P${i}`)
  }

  /** Newest first: by occupiedAt, then by creation. */
  staysOf(encounter: string): Stay[] {
    return this.stays
      .filter((s) => s.encounter === encounter)
      .sort((a, b) => b.occupiedAt - a.occupiedAt || b.seq - a.seq)
  }
  activeOf(encounter: string): Stay | undefined {
    return this.stays.find((s) => s.encounter === encounter && s.dischargedAt === null)
  }
  holder(bed: number): Stay | undefined {
    return this.stays.find((s) => s.dischargedAt === null && s.bed === bed)
  }

  apply(m: ModelMessage): Outcome {
    let deepCancel = false
    this.code = null
    const ok = BED_EVENTS.has(m.event)
      ? this.bedEvent(m)
      : this.decide(m, () => {
          deepCancel = true
        })
    if (ok && m.encounter !== '')
      this.lastApplied.set(m.encounter, Math.max(m.at, this.lastApplied.get(m.encounter) ?? m.at))
    return { status: ok ? 'applied' : 'parked', deepCancel, code: ok ? null : this.code }
  }

  /** docs/BOARD.md: a bed of the ward had a stay, is listed (none here) or is expected. */
  knownBed(bed: number): boolean {
    return this.stays.some((s) => s.bed === bed) || this.expectations.has(bed)
  }
  /** An expectation is shown until BED_EXPECTED_HOURS have passed since its event time (0: always). */
  live(e: Expectation): boolean {
    return this.expectedHours === 0 || this.now - e.since < this.expectedHours * HOUR
  }
  /** The beds GET /beds lists: those with stays, and those a live expectation names. */
  shownBeds(): number[] {
    const beds = new Set(this.stays.map((s) => s.bed))
    for (const [bed, e] of this.expectations) if (this.live(e)) beds.add(bed)
    return [...beds].sort((a, b) => a - b)
  }
  /** Occupied (or on leave) wins, then the housekeeping state, then expected, else free. */
  view(bed: number): BedView {
    const active = this.stays.filter((s) => s.dischargedAt === null && s.bed === bed)
    const hk = this.housekeeping.get(bed) ?? null
    const e = this.expectations.get(bed)
    const expected = e && this.live(e) ? e : null
    const state =
      active.length > 0
        ? active.every((s) => s.onLeave !== null)
          ? 'on-leave'
          : 'occupied'
        : (hk?.state ?? (expected ? 'expected' : 'free'))
    const marks = (pick: (s: Stay) => number | null) =>
      active.flatMap((s) => {
        const since = pick(s)
        return since === null ? [] : [{ encounter: s.encounter, since }]
      })
    return {
      state,
      housekeeping: hk,
      expected: expected
        ? { ...expected, ...(this.expectedHours === 0 ? {} : { until: expected.since + this.expectedHours * HOUR }) }
        : null,
      onLeave: marks((s) => s.onLeave),
      dischargeExpected: marks((s) => s.dischargeExpected),
    }
  }
  expectationsOf(encounter: string): [number, Expectation][] {
    return [...this.expectations].filter(([, e]) => e.encounter === encounter)
  }

  private park(code: string): false {
    this.code = code
    return false
  }

  /** docs/ADT.md, "Bed states": the events that mark beds and stays and never move anyone. */
  private bedEvent(m: ModelMessage): boolean {
    if (m.event === 'A20') return this.bedStatus(m)
    if (this.late(m.encounter, m.at)) return this.park('out-of-order')
    const active = this.activeOf(m.encounter)
    switch (m.event) {
      case 'A14':
        if (active) return this.park('already-admitted')
        return this.expect(m.encounter, m.bed as number, 'admission', m.at)
      case 'A15': {
        if (!active) return this.park('not-admitted')
        const bed = m.pending ?? (m.bed as number)
        if (bed === active.bed) return this.park('no-pending-location')
        return this.expect(m.encounter, bed, 'transfer', m.at)
      }
      case 'A27':
      case 'A26': {
        const kind = m.event === 'A27' ? 'admission' : 'transfer'
        const mine = this.expectationsOf(m.encounter).filter(([, e]) => e.kind === kind)
        if (mine.length === 0) return this.park('nothing-to-cancel')
        for (const [bed] of mine) this.expectations.delete(bed)
        return true
      }
    }
    if (!active) return this.park('not-admitted')
    switch (m.event) {
      case 'A16':
        active.dischargeExpected = m.at
        return true
      case 'A25':
        if (active.dischargeExpected === null) return this.park('nothing-to-cancel')
        active.dischargeExpected = null
        return true
      case 'A21':
      case 'A53':
        if (active.onLeave !== null) return this.park(m.event === 'A21' ? 'already-on-leave' : 'nothing-to-cancel')
        active.onLeave = m.at
        return true
      default:
        // A22 (back) and A52 (the leave out cancelled).
        if (active.onLeave === null) return this.park(m.event === 'A22' ? 'not-on-leave' : 'nothing-to-cancel')
        active.onLeave = null
        return true
    }
  }

  /** One bed a patient, one patient a bed: a later pending event moves the encounter's. */
  private expect(encounter: string, bed: number, kind: Expectation['kind'], at: number): true {
    for (const [other] of this.expectationsOf(encounter)) this.expectations.delete(other)
    this.expectations.set(bed, { encounter, kind, since: at })
    return true
  }

  /** A20: the same state again keeps its since; O and U clear it; U never frees an occupied bed. */
  private bedStatus(m: ModelMessage): boolean {
    const bed = m.bed as number
    if (!this.knownBed(bed)) return this.park('unknown-bed')
    const current = this.housekeeping.get(bed)
    if (current && m.at < current.since) return this.park('out-of-order')
    if (m.status === 'U' && this.holder(bed)) return this.park('bed-occupied')
    const state = TABLE_0116[m.status as string] ?? null
    if (state === null) this.housekeeping.delete(bed)
    else if (current?.state !== state) this.housekeeping.set(bed, { state, since: m.at })
    return true
  }

  private late(encounter: string, at: number): boolean {
    const last = this.lastApplied.get(encounter)
    return last !== undefined && at < last
  }
  /** A stay begins: the encounter's expectation is met, in whichever bed of the ward it was. */
  private add(encounter: string, bed: number, patient: string, provider: string | null, at: number): void {
    this.stays.push({
      seq: this.seq++,
      encounter,
      bed,
      patient,
      provider,
      occupiedAt: at,
      dischargedAt: null,
      onLeave: null,
      dischargeExpected: null,
    })
    // Met wherever in the facility the stay begins (the HIS may place the patient elsewhere).
    for (const [other] of this.expectationsOf(encounter)) this.expectations.delete(other)
  }
  /** A stay ends, and its marks with it. */
  private end(stay: Stay, at: number): void {
    stay.dischargedAt = at
    stay.onLeave = null
    stay.dischargeExpected = null
  }
  /** BED_POLICY=exclusive: a stay from `at` on would overlap one the bed had until later (`bed-taken-since`). */
  private takenSince(bed: number, at: number, except?: Stay): boolean {
    return this.stays.some((s) => s !== except && s.bed === bed && s.dischargedAt !== null && s.dischargedAt > at)
  }
  private admit(m: ModelMessage): boolean {
    if (this.holder(m.bed as number) || this.takenSince(m.bed as number, m.at)) return false
    this.add(m.encounter, m.bed as number, m.patient, m.provider, m.at)
    return true
  }
  private move(active: Stay, m: ModelMessage): boolean {
    const bed = m.bed as number
    if (active.bed === bed) return true
    if (this.holder(bed) || this.takenSince(bed, m.at, active)) return false
    this.end(active, m.at)
    this.add(m.encounter, bed, m.patient, m.provider ?? active.provider, m.at)
    return true
  }

  private decide(m: ModelMessage, deep: () => void): boolean {
    if (m.event === 'A40' || m.event === 'A47') return this.merge(m)
    if (m.event === 'A50') return this.renumber(m)
    if (m.event === 'A17') return this.swap(m)
    if (this.late(m.encounter, m.at)) return false
    const mine = this.staysOf(m.encounter)
    const active = mine.find((s) => s.dischargedAt === null)
    switch (m.event) {
      case 'A01':
        return !active && this.admit(m)
      case 'A06':
        return active ? active.bed === m.bed : this.admit(m)
      case 'A02':
        return active !== undefined && this.move(active, m)
      case 'A08':
        if (!active) return false
        if (m.bed !== null && m.bed !== active.bed) return this.move(active, m)
        if (m.provider !== null) active.provider = m.provider
        return true
      case 'A54':
      case 'A55':
        if (!active) return false
        if (m.event === 'A54') this.doctorBefore.set(m.encounter, active.provider)
        active.provider = m.provider
        return true
      case 'A03':
      case 'A07':
        if (!active) return false
        this.end(active, m.left ?? m.at)
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
        if (mine.length > 2) deep()
        this.stays = this.stays.filter((s) => s !== active)
        previous.dischargedAt = null
        return true
      }
      case 'A13': {
        const newest = mine[0]
        if (active || !newest || this.holder(newest.bed)) return false
        if (mine.length > 1) deep()
        newest.dischargedAt = null
        return true
      }
      default:
        return false
    }
  }

  /** A17: both stays end, each visit begins again in the other's bed. The log files it under the first visit. */
  private swap(m: ModelMessage): boolean {
    const o = m.swap as NonNullable<ModelMessage['swap']>
    if (this.late(m.encounter, m.at) || this.late(o.encounter, m.at)) return false
    const a = this.activeOf(m.encounter)
    const b = this.activeOf(o.encounter)
    if (!a || !b || a.bed === b.bed) return false
    const named = [m.bed, o.bed]
    if (!named.includes(a.bed) || !named.includes(b.bed)) return false
    this.end(a, m.at)
    this.end(b, m.at)
    this.add(m.encounter, b.bed, m.patient, m.provider ?? a.provider, m.at)
    this.add(o.encounter, a.bed, o.patient, o.provider ?? b.provider, m.at)
    // The second visit's later events are checked against the swap too.
    this.lastApplied.set(o.encounter, Math.max(m.at, this.lastApplied.get(o.encounter) ?? m.at))
    return true
  }

  /** A40/A47: every stay (active or past) of MRG-1 takes PID-3; none: parked. */
  private merge(m: ModelMessage): boolean {
    const from = m.mergeFrom as string
    const stays = this.stays.filter((s) => s.patient === from)
    if (stays.length === 0) return false
    for (const s of stays) s.patient = m.patient
    this.patients = this.patients.map((p) => (p === from ? m.patient : p))
    return true
  }

  /** A50: the stays and the applied messages of MRG-5 take PV1-19's number. */
  private renumber(m: ModelMessage): boolean {
    const old = m.previousEncounter as string
    if (this.late(old, m.at)) return false
    const stays = this.stays.filter((s) => s.encounter === old)
    if (stays.length === 0 || this.stays.some((s) => s.encounter === m.encounter)) return false
    for (const s of stays) s.encounter = m.encounter
    // The visit's pending admission or transfer is the visit's, as its stays and log are.
    for (const [, e] of this.expectationsOf(old)) e.encounter = m.encounter
    const last = Math.max(this.lastApplied.get(old) ?? 0, this.lastApplied.get(m.encounter) ?? 0)
    this.lastApplied.delete(old)
    if (last > 0) this.lastApplied.set(m.encounter, last)
    this.visits = this.visits.map((v) => (v === old ? m.encounter : v))
    if (this.doctorBefore.has(old)) this.doctorBefore.set(m.encounter, this.doctorBefore.get(old) ?? null)
    return true
  }
}
