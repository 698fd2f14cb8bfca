import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { runCli } from '../../cli/run.js'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { startServer, stopServer } from './server-process.js'

/**
 * `npm run fault-test`: a real full file system. The database lives on a 3 MB tmpfs (mounting needs
 * root), the real server runs on it, creates fill it up; then space is freed.
 */
t.test('the server on a file system that fills up: 507, /health 503, one log, reads, recovery', async (t) => {
  if (process.getuid?.() !== 0) throw new Error('npm run fault-test mounts a tmpfs and must run as root')
  const dir = mkdtempSync(join(tmpdir(), 'facility-full-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', dir])
  t.teardown(() => {
    execFileSync('umount', [dir])
    rmSync(dir, { recursive: true, force: true })
  })
  // Room the operator can free later.
  const ballast = join(dir, 'ballast')
  writeFileSync(ballast, Buffer.alloc(600_000))
  const path = join(dir, 'facility.db')
  const setup = openDatabase(path)
  const { token } = createTokenRepository(setup).create({ account: 'nurse', role: 'write' })
  setup.close()

  const server = await startServer({ DATABASE_PATH: path })
  t.teardown(() => stopServer(server))
  const auth = { authorization: `Bearer ${token}` }
  const admit = (i: number) =>
    fetch(`${server.base}/ward-occupants`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ encounter: `e-${i}`, bed: `B-${i}`, occupiedBy: 'p', room: 'r'.repeat(200) }),
    })
  const acknowledged: string[] = []
  let refused: Response | undefined
  let i = 0
  for (; i < 50_000 && !refused; i++) {
    const res = await admit(i)
    if (res.status === 200) acknowledged.push(((await res.json()) as { id: string }).id)
    else refused = res
  }
  if (!refused) throw new Error('the file system never filled up')
  t.ok(acknowledged.length > 10, `${acknowledged.length} admissions before the disk was full`)
  t.equal(refused.status, 507)
  t.match(await refused.json(), { code: 'STORAGE_FULL', message: /disk .* is full/ })
  for (let k = 0; k < 5; k++) t.equal((await admit(i++)).status, 507, 'each further write: 507')

  const health = await fetch(`${server.base}/health`)
  t.equal(health.status, 503)
  t.match(await health.json(), { database: 'full', code: 'SQLITE_FULL' })
  const list = await fetch(`${server.base}/ward-occupants?$limit=0`, { headers: auth })
  t.equal(list.status, 200, 'reads go on')
  t.equal(((await list.json()) as { total: number }).total, acknowledged.length)
  const errorLines = server
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && JSON.parse(line).level >= 50)
  t.equal(errorLines.length, 1, 'one error log line for the episode')
  t.match(errorLines[0], path)

  // A backup onto the full disk: a clear message, no half-written copy left behind.
  const err: string[] = []
  const copy = join(dir, 'backup.db')
  const code = await runCli(['--database', path, 'backup', copy], { out: () => {}, err: (l) => err.push(l) })
  t.equal(code, 1)
  t.match(err.join('\n'), /no space left for the backup/)
  t.notOk(existsSync(copy), 'no partial backup')

  rmSync(ballast)
  const again = await admit(i++)
  t.equal(again.status, 200, 'space freed: writes succeed without a restart')
  acknowledged.push(((await again.json()) as { id: string }).id)
  t.equal((await fetch(`${server.base}/health`)).status, 200, '/health is ok again')

  t.equal(await stopServer(server), 0, 'a clean stop')
  const oracle = new BetterSqlite3(path, { readonly: true })
  t.teardown(() => oracle.close())
  t.equal(oracle.pragma('integrity_check', { simple: true }), 'ok')
  const stored = new Set(oracle.prepare('SELECT id FROM ward_occupants').pluck().all() as string[])
  t.ok(
    acknowledged.every((id) => stored.has(id)),
    'every acknowledged admission is in the file',
  )
  t.equal(stored.size, acknowledged.length, 'and no refused one')
})
