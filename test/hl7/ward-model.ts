/**
 * The ward as docs/ADT.md describes it, written apart from the app (no import of its code): the
 * stays with their patient, doctor and times, and whether each ADT message applies or parks. The
 * model-based property test (ward-model.test.ts) checks the app against it.
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
] as const
export type ModelEvent = (typeof MODEL_EVENTS)[number]

export interface Stay {
  seq: number
  encounter: string
  bed: number
  patient: string
  provider: string | null
  occupiedAt: number
  dischargedAt: number | null
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
}

export interface Outcome {
  status: 'applied' | 'parked'
  /** A cancel (A12, A13) applied to an encounter with more than one earlier stay. */
  deepCancel: boolean
}

export class WardModel {
  stays: Stay[] = []
  lastApplied = new Map<string, number>()
  /** The test's three visits (current numbers, after A50s) and their patients (after merges). */
  visits: string[]
  patients: string[]
  /** The doctor before the last A54 of a visit, which an A55 restores. */
  doctorBefore = new Map<string, string | null>()
  private seq = 0

  constructor(prefix: string) {
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
    const ok = this.decide(m, () => {
      deepCancel = true
    })
    if (ok && m.encounter !== '')
      this.lastApplied.set(m.encounter, Math.max(m.at, this.lastApplied.get(m.encounter) ?? m.at))
    return { status: ok ? 'applied' : 'parked', deepCancel }
  }

  private late(encounter: string, at: number): boolean {
    const last = this.lastApplied.get(encounter)
    return last !== undefined && at < last
  }
  private add(encounter: string, bed: number, patient: string, provider: string | null, at: number): void {
    this.stays.push({ seq: this.seq++, encounter, bed, patient, provider, occupiedAt: at, dischargedAt: null })
  }
  /** The bed had a stay (other than `except`) that ended after `at`: a stay from `at` would overlap it. */
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
    active.dischargedAt = m.at
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
        active.dischargedAt = m.left ?? m.at
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
    a.dischargedAt = m.at
    b.dischargedAt = m.at
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
    const last = Math.max(this.lastApplied.get(old) ?? 0, this.lastApplied.get(m.encounter) ?? 0)
    this.lastApplied.delete(old)
    if (last > 0) this.lastApplied.set(m.encounter, last)
    this.visits = this.visits.map((v) => (v === old ? m.encounter : v))
    if (this.doctorBefore.has(old)) this.doctorBefore.set(m.encounter, this.doctorBefore.get(old) ?? null)
    return true
  }
}
