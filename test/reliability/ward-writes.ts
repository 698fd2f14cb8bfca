import BetterSqlite3 from 'better-sqlite3'

/**
 * A client that admits patients (and discharges some) as fast as its writers get answers, and
 * records every acknowledgement with its time, and every request that got no answer (in flight
 * when the server died). What a restored database may hold is judged against this record.
 */
export interface WriteRecord {
  /** id of each acknowledged admission → when its 200 arrived. */
  admitted: Map<string, number>
  /** id of each acknowledged discharge → when its 200 arrived. */
  discharged: Map<string, number>
  /** Beds of admissions sent without an answer. */
  admittingBeds: Set<string>
  /** ids whose discharge was sent without an answer. */
  discharging: Set<string>
  /** Answers other than 200: the service refused a write it should have taken. */
  unexpected: string[]
  stop: boolean
}

export function newWriteRecord(): WriteRecord {
  return {
    admitted: new Map(),
    discharged: new Map(),
    admittingBeds: new Set(),
    discharging: new Set(),
    unexpected: [],
    stop: false,
  }
}

export interface DriveOptions {
  writers: number
  /** Beds are named `<prefix>-w<writer>-<n>`, and the account is the token's. */
  prefix: string
  /** Every so many admissions a writer discharges its previous patient. */
  dischargeEvery?: number
  /** A pause between a writer's requests (a ward, not a benchmark). */
  pauseMs?: number
}

/** Writes until `record.stop` is set or the server stops answering. */
export function driveWrites(base: string, token: string, opts: DriveOptions, record: WriteRecord): Promise<void> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
  async function send(method: string, path: string, body: object): Promise<Response | null> {
    try {
      return await fetch(`${base}${path}`, { method, headers, body: JSON.stringify(body) })
    } catch {
      return null // no answer: the server is gone
    }
  }
  async function writer(w: number): Promise<void> {
    let previous: string | null = null
    for (let n = 0; !record.stop; n++) {
      if (previous !== null && opts.dischargeEvery && n % opts.dischargeEvery === 0) {
        const id: string = previous
        record.discharging.add(id)
        const res = await send('PATCH', `/ward-occupants/${id}`, { discharge: true })
        if (res === null) return
        if (res.status !== 200) return void record.unexpected.push(`${res.status} ${await res.text()}`)
        record.discharged.set(id, Date.now())
        record.discharging.delete(id)
      }
      const bed = `${opts.prefix}-w${w}-${n}`
      record.admittingBeds.add(bed)
      const res = await send('POST', '/ward-occupants', { encounter: `enc-${bed}`, bed, occupiedBy: `p-${bed}` })
      if (res === null) return
      if (res.status !== 200) return void record.unexpected.push(`${res.status} ${await res.text()}`)
      previous = ((await res.json()) as { id: string }).id
      record.admitted.set(previous, Date.now())
      record.admittingBeds.delete(bed)
      if (opts.pauseMs) await new Promise((resolve) => setTimeout(resolve, opts.pauseMs))
    }
  }
  return Promise.all(Array.from({ length: opts.writers }, (_, w) => writer(w))).then(() => {})
}

export interface RestoredCheck {
  /** Acknowledged admissions not in the file, with their acknowledgement times. */
  missing: [string, number][]
  /** Acknowledged discharges the file does not show. */
  undischarged: [string, number][]
  /** Records of this client that were neither acknowledged nor in flight; discharges likewise. */
  strangers: string[]
  /** Records whose audit entries or feed events do not match them (a half-applied change). */
  inconsistent: string[]
  /** Records in the file in all (seeded ones too). */
  records: number
  /** Records in the file that this client wrote (its bed prefix). */
  mine: number
}

interface Row {
  id: string
  bed: string
  version: number
  discharged_at: number | null
}

/**
 * Reads a database file (a restored copy) with plain SQL and judges it against the record:
 * what is missing, what should not be there, and whether each ward occupant's version is the
 * number of its audit entries and of its feed events, its last audit entry showing its discharge.
 */
export function checkRestored(file: string, record: WriteRecord, prefix: string): RestoredCheck {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true })
  try {
    const rows = db.prepare<[], Row>('SELECT id, bed, version, discharged_at FROM ward_occupants').all()
    const audits = countBy(db, 'audit_log')
    const feed = countBy(db, 'feed_events')
    const lastAfter = db.prepare<[string], string | null>(
      "SELECT after FROM audit_log WHERE resource = 'ward-occupants' AND record_id = ? ORDER BY seq DESC LIMIT 1",
    )
    const byId = new Map(rows.map((row) => [row.id, row]))
    const strangers: string[] = []
    const inconsistent: string[] = []
    let mine = 0
    for (const row of rows) {
      if (row.version !== audits.get(row.id) || row.version !== feed.get(row.id)) inconsistent.push(row.id)
      else if (row.version > 1) {
        const after = JSON.parse(lastAfter.pluck().get(row.id) ?? '{}') as { dischargedAt?: number }
        if ((after.dischargedAt ?? null) !== row.discharged_at) inconsistent.push(row.id)
      }
      if (!row.bed.startsWith(`${prefix}-`)) continue
      mine++
      if (!record.admitted.has(row.id) && !record.admittingBeds.has(row.bed)) strangers.push(row.id)
      if (row.discharged_at !== null && !record.discharged.has(row.id) && !record.discharging.has(row.id))
        strangers.push(`${row.id} (discharged)`)
    }
    for (const id of [...audits.keys(), ...feed.keys()]) if (!byId.has(id)) inconsistent.push(`${id} (no record)`)
    return {
      missing: [...record.admitted].filter(([id]) => !byId.has(id)),
      undischarged: [...record.discharged].filter(([id]) => byId.get(id)?.discharged_at == null),
      strangers,
      inconsistent,
      records: rows.length,
      mine,
    }
  } finally {
    db.close()
  }
}

function countBy(db: BetterSqlite3.Database, table: 'audit_log' | 'feed_events'): Map<string, number> {
  const rows = db
    .prepare<[], [string, number]>(
      `SELECT record_id, count(*) FROM ${table} WHERE resource = 'ward-occupants' GROUP BY record_id`,
    )
    .raw()
    .all()
  return new Map(rows)
}
