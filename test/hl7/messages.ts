/** ADT messages written the way sites send them (v2.3 and v2.5.1, Z-segments, CR or CRLF). */
export interface AdtFields {
  event: string
  control: string
  encounter?: string
  patient?: string
  /** PID-3 as sent (repetitions, CX-5 types); overrides `patient`. */
  pid3?: string
  facility?: string
  room?: string
  bed?: string
  provider?: string
  /** EVN-2 and MSH-7 (HL7 timestamp). */
  at?: string
  /** EVN-6. */
  occurredAt?: string
  /** PV1-45. */
  dischargedAt?: string
  sender?: string
  senderFacility?: string
  version?: '2.3' | '2.5.1'
  type?: string
  segmentEnd?: '\r' | '\r\n'
  zSegment?: boolean
  /** An MRG segment after the PID (A40, A47: MRG-1, the identifier merged away; A50: MRG-5, the old visit). */
  mrg?: { patient?: string; visit?: string }
  /** A17: the second patient's PID/PV1 group. */
  swap?: { patient: string; encounter: string; bed: string; room?: string; facility?: string; provider?: string }
  /** No PV1 at all (an A40 as sites send it). */
  noPv1?: boolean
}

/** PV1 with field n at index n (1-based), the rest empty. */
function pv1(values: Record<number, string>): string {
  const fields = Array.from({ length: 45 }, (_, i) => values[i + 1] ?? '')
  while (fields.length > 0 && fields.at(-1) === '') fields.pop()
  return ['PV1', ...fields].join('|')
}

function visit(f: Pick<AdtFields, 'bed' | 'facility' | 'room' | 'provider' | 'encounter' | 'dischargedAt'>): string {
  const location =
    f.bed === undefined && f.facility === undefined ? '' : `W1^${f.room ?? ''}^${f.bed ?? ''}^${f.facility ?? ''}`
  return pv1({
    1: '1',
    2: 'I',
    3: location,
    7: f.provider === undefined ? '' : `${f.provider}^Smith^Anna`,
    19: f.encounter ?? '',
    45: f.dischargedAt ?? '',
  })
}

const pid = (pid3: string) => `PID|1||${pid3}||Doe^Jane||19700101|F`

export function adt(f: AdtFields): string {
  const at = f.at ?? '20260105103000'
  const version = f.version ?? '2.5.1'
  const type = f.type ?? (version === '2.3' ? `ADT^${f.event}` : `ADT^${f.event}^ADT_A01`)
  const segments = [
    `MSH|^~\\&|${f.sender ?? 'HIS'}|${f.senderFacility ?? 'GENERAL'}|WARD|FS|${at}||${type}|${f.control}|P|${version}`,
    `EVN|${f.event}|${at}||||${f.occurredAt ?? ''}`,
    pid(f.pid3 ?? `${f.patient ?? 'P-1'}^^^GENERAL^MR`),
  ]
  if (f.mrg)
    segments.push(`MRG|${f.mrg.patient === undefined ? '' : `${f.mrg.patient}^^^GENERAL^MR`}||||${f.mrg.visit ?? ''}`)
  if (!f.noPv1) segments.push(visit(f))
  if (f.swap)
    segments.push(pid(`${f.swap.patient}^^^GENERAL^MR`), visit({ ...f.swap, facility: f.swap.facility ?? f.facility }))
  if (f.zSegment) segments.push('ZPV|custom^site^data|\\T\\')
  return segments.join(f.segmentEnd ?? '\r')
}
