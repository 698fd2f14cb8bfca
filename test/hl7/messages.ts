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
}

/** PV1 with field n at index n (1-based), the rest empty. */
function pv1(values: Record<number, string>): string {
  const fields = Array.from({ length: 45 }, (_, i) => values[i + 1] ?? '')
  while (fields.length > 0 && fields.at(-1) === '') fields.pop()
  return ['PV1', ...fields].join('|')
}

export function adt(f: AdtFields): string {
  const at = f.at ?? '20260105103000'
  const version = f.version ?? '2.5.1'
  const type = f.type ?? (version === '2.3' ? `ADT^${f.event}` : `ADT^${f.event}^ADT_A01`)
  const location =
    f.bed === undefined && f.facility === undefined ? '' : `W1^${f.room ?? ''}^${f.bed ?? ''}^${f.facility ?? ''}`
  const segments = [
    `MSH|^~\\&|${f.sender ?? 'HIS'}|${f.senderFacility ?? 'GENERAL'}|WARD|FS|${at}||${type}|${f.control}|P|${version}`,
    `EVN|${f.event}|${at}||||${f.occurredAt ?? ''}`,
    `PID|1||${f.pid3 ?? `${f.patient ?? 'P-1'}^^^GENERAL^MR`}||Doe^Jane||19700101|F`,
    pv1({
      1: '1',
      2: 'I',
      3: location,
      7: f.provider === undefined ? '' : `${f.provider}^Smith^Anna`,
      19: f.encounter ?? '',
      45: f.dischargedAt ?? '',
    }),
  ]
  if (f.zSegment) segments.push('ZPV|custom^site^data|\\T\\')
  return segments.join(f.segmentEnd ?? '\r')
}
