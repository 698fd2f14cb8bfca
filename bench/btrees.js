// The b-trees one write touches (docs/PERFORMANCE.md, "B-trees written"): a create, a discharge and
// an ADT admission, each alone on a fresh database file. How they are counted: the WAL is emptied
// (checkpoint TRUNCATE) before the operation, and after its answer every page of the WAL's valid
// frames is mapped to the table or index that owns it (SQLite's dbstat). A page rewritten twice
// counts once. Page 1 is left out: it is sqlite_schema's root, but also the file header, which a
// commit rewrites whenever the file grows by a page; so are freelist pages (no b-tree owns them).
// Alone: `npm run build && node bench/btrees.js`.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Hl7Message } from '@medplum/core'
import { Hl7Client } from '@medplum/hl7'
import { buildApp } from '../dist/app.js'
import { defaultConfig } from '../dist/config.js'

/** The page numbers of the WAL's valid frames (those whose salts match the header's). */
function walPages(path) {
  let wal
  try {
    wal = readFileSync(path)
  } catch {
    return []
  }
  if (wal.length < 32) return []
  const pageSize = wal.readUInt32BE(8)
  const salt = [wal.readUInt32BE(16), wal.readUInt32BE(20)]
  const pages = new Set()
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt[0] || wal.readUInt32BE(at + 12) !== salt[1]) break
    pages.add(wal.readUInt32BE(at))
  }
  return [...pages]
}

/** The b-trees that own `pages`; a page no b-tree owns is the freelist's (pages a dropped index left). */
function btreesOf(db, pages) {
  const owner = db.prepare('SELECT name FROM dbstat WHERE pageno = ?').pluck()
  const names = new Set()
  for (const page of pages) {
    const name = page === 1 ? undefined : owner.get(page)
    if (name !== undefined) names.add(name)
  }
  return [...names].sort()
}

const admission = (n) =>
  Hl7Message.parse(
    [
      `MSH|^~\\&|BENCH|GENERAL|WARD|FS|20260105103000||ADT^A01^ADT_A01|BT-${n}|P|2.5.1`,
      'EVN|A01|20260105103000',
      `PID|1||P-${n}^^^GENERAL^MR||Doe^Jane`,
      `PV1|1|I|W1^R1^BT-B${n}^bench||||DR1^Smith||||||||||||BT-E${n}`,
    ].join('\r'),
  )

/** For each operation: the b-trees its commit wrote, by name. */
export async function countBtrees() {
  const dir = mkdtempSync(join(tmpdir(), 'facility-btrees-'))
  const path = join(dir, 'btrees.db')
  const config = defaultConfig({ DATABASE_PATH: path, LOG_LEVEL: 'silent', RATE_LIMIT_MAX: 0, HL7_PORT: 0 })
  const app = await buildApp(config)
  const client = new Hl7Client({ host: '127.0.0.1', port: app.hl7.port })
  try {
    const token = app.tokens.create({ account: 'nurse', role: 'write', facility: 'bench', label: 'btrees' }).token
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    const post = (n) =>
      app.inject({
        method: 'POST',
        url: '/ward-occupants',
        headers,
        payload: { bed: `B-${n}`, encounter: `E-${n}`, occupiedBy: `P-${n}` },
      })
    // Warm-up: a first write of each kind (first rows of the counters, the seen beds ...).
    const first = await post(0)
    await app.inject({
      method: 'PATCH',
      url: `/ward-occupants/${first.json().id}`,
      headers,
      payload: { discharge: true },
    })
    await client.sendAndWait(admission(0), { timeoutMs: 30_000 })
    async function measure(operation) {
      app.db.pragma('wal_checkpoint(TRUNCATE)')
      await operation()
      return btreesOf(app.db, walPages(`${path}-wal`))
    }
    let created
    const result = {
      create: await measure(async () => {
        created = await post(1)
      }),
      discharge: await measure(() =>
        app.inject({
          method: 'PATCH',
          url: `/ward-occupants/${created.json().id}`,
          headers,
          payload: { discharge: true },
        }),
      ),
      admission: await measure(() => client.sendAndWait(admission(1), { timeoutMs: 30_000 })),
    }
    return result
  } finally {
    await client.close()
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

export function btreeSection(counts) {
  const rows = Object.entries(counts).map(([op, names]) => `| ${op} | ${names.length} | ${names.join(', ')} |`)
  return [
    '#### B-trees written per operation',
    '',
    'Each operation alone on a fresh file: the pages of its commit in the WAL, mapped to their table or index (`bench/btrees.js`).',
    '',
    '| operation | b-trees | which |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const counts = await countBtrees()
  process.stdout.write(`${btreeSection(counts)}\n`)
}
