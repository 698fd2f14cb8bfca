import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openDatabase } from '../../db/connection.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { listening } from './server-process.js'

function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number),
  )
}

/**
 * The durability promise seen from the kernel, an oracle independent of the service's own
 * bookkeeping. The server runs under strace with whole buffers shown. Every record id a send on a
 * TCP socket carries (an answer, a read, a live feed event) must first have been written to the
 * WAL file, and a sync of that file must have started after that write and returned before the
 * send: nobody is told of a record a power cut could still take back. (An answer may leave while
 * a later commit is still being synced, as long as it says nothing of that commit.) Both places
 * the sync can happen, DURABLE_SYNC=background and =commit, are held to it.
 */

const WRITERS = 6
const WRITES_EACH = 40

interface SyscallCheck {
  sends: number
  /** The record ids and discharge times the sends told of, each checked. */
  checked: Set<string>
  violations: string[]
  syncs: number
}

const RECORD_ID = /\\"id\\":\\"([0-9a-f]{24})\\"/g
// A discharge's time, as the audit entry and the feed event store it and every answer shows it.
const DISCHARGED_AT = /\\"dischargedAt\\":(\d{13})/g

/** Reads an `strace -f -yy -s N` log (one line per call, `<unfinished ...>` / `<... resumed>` across threads). */
export function checkSyscallOrder(log: string, walFile: string): SyscallCheck {
  const wal = `${walFile}>`
  const pending = new Map<string, { call: string; line: number }>()
  // Where each record id was first written to the WAL (a line number).
  const writtenAt = new Map<string, number>()
  // The latest start of a finished sync of the WAL: every WAL write before it is on disk.
  let syncedThrough = -1
  const toldOf = new Set<string>()
  const result: SyscallCheck = { sends: 0, checked: toldOf, violations: [], syncs: 0 }
  const lines = log.split('\n')
  lines.forEach((text, index) => {
    const pid = /^(\d+)\s/.exec(text)?.[1] ?? ''
    const resumed = /<\.\.\. (\w+) resumed>/.exec(text)
    let call: string
    let start: number
    let target: string
    if (resumed) {
      const begun = pending.get(pid)
      pending.delete(pid)
      if (!begun) return
      call = begun.call
      start = begun.line
      target = lines[begun.line] ?? ''
    } else {
      const match = /^\d+\s+(\w+)\(/.exec(text)
      if (!match) return
      call = match[1] as string
      start = index
      target = text
      // Writes and sends count from their start; syncs only once they return.
      if (text.includes('<unfinished ...>') && (call === 'fdatasync' || call === 'fsync')) {
        pending.set(pid, { call, line: index })
        return
      }
    }
    if (resumed && call !== 'fdatasync' && call !== 'fsync') return // counted at its start
    const onWal = target.includes(wal)
    if (/^(pwrite64|write|writev)$/.test(call) && onWal) {
      for (const [, at] of target.matchAll(DISCHARGED_AT))
        if (!writtenAt.has(`discharged ${at}`)) writtenAt.set(`discharged ${at}`, start)
      // A row's id is stored bare in its page, between bytes strace may print as octal digits
      // (\\0006b07...): every 24 characters of a run of hex digits may be an id.
      for (const [run] of target.matchAll(/[0-9a-f]{24,}/g))
        for (let at = 0; at + 24 <= run.length; at++) {
          const id = run.slice(at, at + 24)
          if (!writtenAt.has(id)) writtenAt.set(id, start)
        }
    } else if ((call === 'fdatasync' || call === 'fsync') && onWal) {
      if (!/= 0\b/.test(text)) return
      result.syncs++
      syncedThrough = Math.max(syncedThrough, start)
    } else if (/^(write|writev|sendmsg|sendto)$/.test(call) && /<TCP(v6)?:\[/.test(target)) {
      result.sends++
      const told = [
        ...[...target.matchAll(RECORD_ID)].map((m) => m[1] as string),
        ...[...target.matchAll(DISCHARGED_AT)].map((m) => `discharged ${m[1]}`),
      ]
      for (const id of told) {
        const written = writtenAt.get(id as string)
        if (written === undefined)
          result.violations.push(`line ${index + 1}: ${id} was sent but never written to the WAL`)
        else if (written > syncedThrough)
          result.violations.push(
            `line ${index + 1}: ${id} was sent before its WAL write (line ${written + 1}) was synced`,
          )
        toldOf.add(id)
      }
    }
  })
  return result
}

t.test('the oracle itself: a record told of before its sync returned, or before its write, is found', async (t) => {
  const wal = '/d/f.db-wal'
  const id = '6b076f3388c2e7f4afd75bbf'
  const later = '6b076f3388c2e7f4afd75bc0'
  const write = (record: string) => `1 pwrite64(5</d/f.db-wal>, "\\r\\0${record}\\0\\0", 4096, 0) = 4096`
  const send = (record: string) =>
    `1 writev(9<TCP:[127.0.0.1:3000->127.0.0.1:5000]>, [{iov_base="HTTP/1.1 200 OK\\r\\n\\r\\n{\\"id\\":\\"${record}\\"}"}], 1) = 60`
  const good = [
    write(id),
    `2 fdatasync(5</d/f.db-wal> <unfinished ...>`,
    // A later commit, not yet synced, does not hold back an answer about the earlier one.
    write(later),
    `2 <... fdatasync resumed>) = 0`,
    // The server's own log on its standard output is not an answer.
    `3 write(1<UNIX-STREAM:[7->8]>, "{\\"id\\":\\"${later}\\"}", 30) = 30`,
    send(id),
  ].join('\n')
  const checked = checkSyscallOrder(good, wal)
  t.same(checked.violations, [])
  t.equal(checked.checked.size, 1)
  const early = [write(id), `2 fdatasync(5</d/f.db-wal> <unfinished ...>`, send(id), `2 <... fdatasync resumed>) = 0`]
  t.equal(checkSyscallOrder(early.join('\n'), wal).violations.length, 1, 'a send before the sync returned')
  const stale = [`2 fdatasync(5</d/f.db-wal>) = 0`, write(id), send(id)]
  t.equal(checkSyscallOrder(stale.join('\n'), wal).violations.length, 1, 'a sync that started before the write')
  t.equal(checkSyscallOrder(send(id), wal).violations.length, 1, 'a record never written')
})

const hasStrace = spawn('strace', ['-V'], { stdio: 'ignore' })
const straceMissing = await new Promise<boolean>((resolve) => {
  hasStrace.once('error', () => resolve(true))
  hasStrace.once('exit', (code) => resolve(code !== 0))
})

for (const mode of ['background', 'commit'] as const) {
  t.test(`DURABLE_SYNC=${mode}: no answer and no feed event leaves before its WAL write is synced`, async (t) => {
    if (straceMissing)
      throw new Error('strace is needed for this test (apt-get install -y strace; .ci/run installs it)')
    const dir = mkdtempSync(join(tmpdir(), 'durable-order-'))
    if (!process.env.KEEP_TRACE) t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    else t.comment(dir)
    const path = join(dir, 'ward.db')
    const db = openDatabase(path)
    const { token } = createTokenRepository(db).create({ account: 'nurse', role: 'write', facility: 'W1' })
    db.close()
    const trace = join(dir, 'trace.log')
    const child = spawn(
      'strace',
      [
        '-f',
        '-qq',
        '-yy',
        '-s',
        '65536',
        '-o',
        trace,
        '-e',
        'trace=pwrite64,write,writev,sendmsg,sendto,fdatasync,fsync',
        process.execPath,
        '--import=tsx',
        'server.ts',
      ],
      {
        env: {
          ...process.env,
          PORT: '0',
          // info: listening() waits for the line that says where it listens.
          LOG_LEVEL: 'info',
          RATE_LIMIT_MAX: '0',
          DATABASE_PATH: path,
          DURABLE_SYNC: mode,
          FEED_HEARTBEAT_MS: '300000',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const server = await listening(child)
    // The server is strace's child: it is the one told to stop, and strace ends with it.
    const stop = async () => {
      if (child.exitCode !== null) return
      for (const pid of childrenOf(child.pid as number)) process.kill(pid, 'SIGTERM')
      await once(child, 'exit')
    }
    t.teardown(stop)
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }

    // A live feed stream: its events are sends too.
    const feed = await fetch(`${server.base}/events?resources=ward-occupants`, { headers })
    t.equal(feed.status, 200)
    const reader = feed.body?.getReader()
    let feedText = ''
    const reading = (async () => {
      for (;;) {
        const chunk = await reader?.read()
        if (!chunk || chunk.done) return
        feedText += new TextDecoder().decode(chunk.value)
      }
    })()

    const ids: string[] = []
    const statuses: number[] = []
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (let i = 0; i < WRITES_EACH; i++) {
          const res = await fetch(`${server.base}/ward-occupants`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ encounter: `e-${w}-${i}`, bed: `B-${w}-${i}`, occupiedBy: 'patient' }),
          })
          statuses.push(res.status)
          const { id } = (await res.json()) as { id: string }
          ids.push(id)
          if (i % 2 === 1) {
            // A discharge: its answer and its event tell of a change to a record already on disk.
            const discharged = await fetch(`${server.base}/ward-occupants/${id}`, {
              method: 'PATCH',
              headers,
              body: JSON.stringify({ discharge: true }),
            })
            statuses.push(discharged.status)
            await discharged.text()
          }
          // A read right behind the writes: the newest records, among them other writers' that a
          // batch committed a moment ago, whose answers may still wait for their sync.
          const read = await fetch(`${server.base}/ward-occupants?$sort[createdAt]=-1&$limit=5`, { headers })
          statuses.push(read.status)
          await read.text()
        }
      }),
    )
    t.same(new Set(statuses), new Set([200]), 'every write and read answered 200')
    const created = () => feedText.match(/event: ward-occupants created/g)?.length ?? 0
    // The last events may still be on their way when the last answer arrives.
    const patched = () => feedText.match(/event: ward-occupants patched/g)?.length ?? 0
    const all = () => created() >= WRITERS * WRITES_EACH && patched() >= (WRITERS * WRITES_EACH) / 2
    for (let waited = 0; !all() && waited < 10_000; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50))
    await stop()
    await reading.catch(() => {})
    t.equal(created(), WRITERS * WRITES_EACH, 'every change reached the feed')

    const check = checkSyscallOrder(readFileSync(trace, 'utf8'), `${path}-wal`)
    t.same(check.violations.slice(0, 5), [], 'no record told of before it was on disk')
    t.ok(check.syncs > 0, `the WAL was synced (${check.syncs} times)`)
    t.equal(patched(), (WRITERS * WRITES_EACH) / 2, 'every discharge too')
    // Discharges of one batch share their millisecond, so their times are fewer than the discharges.
    const discharges = [...check.checked].filter((key) => key.startsWith('discharged ')).length
    t.equal(check.checked.size - discharges, WRITERS * WRITES_EACH, `every record checked, in ${check.sends} sends`)
    t.ok(discharges > 0, `discharge times checked: ${discharges} (the check was not vacuous)`)
  })
}
