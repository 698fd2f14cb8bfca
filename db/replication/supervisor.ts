import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { type LitestreamLine, type LogLevel, parseLine, redactValue } from './log-lines.js'
import { Unshipped } from './unshipped.js'

export interface Failing {
  since: number
  message: string
}

export interface ReplicationStatus {
  /** Litestream is running. */
  running: boolean
  /** How long the oldest commit not yet on the replica has waited (0: it has every commit). */
  lagMs: number
  /** When Litestream last wrote to the replica. */
  lastSyncAt: number | null
  /** How often Litestream was started again after it ended by itself. */
  restarts: number
  /** Set while Litestream is down or its replica fails, until it next ships a change. */
  failing: Failing | null
}

export interface StopOutcome {
  code: number | null
  signal: NodeJS.Signals | null
  /** It did not end within the deadline and was killed: its final sync may be incomplete. */
  killed: boolean
  /** It was not running when asked to stop (between restarts). */
  wasRunning: boolean
  lastError: string | null
  /** Commits not shown shipped by the end (0: its final sync carried every commit it was told of). */
  unshippedMs: number
  /**
   * Errors it logged after our SIGTERM, held back until the outcome is known: the caller logs them
   * as errors only if commits are missing from the replica (see stop's log in plugins/replication.ts).
   */
  closingErrors: ClosingError[]
}

export interface ClosingError {
  msg: string
  fields: Record<string, unknown>
}

export interface SupervisorOptions {
  binary: string
  configPath: string
  env: NodeJS.ProcessEnv
  log: (level: LogLevel, msg: string, fields?: Record<string, unknown>) => void
  redact: (text: string) => string
  /** Told when Litestream starts and ends (the server checkpoints itself again while it is down). */
  onRunning?: (running: boolean) => void
  firstRetryMs?: number
  longestRetryMs?: number
  /** A run this long resets the backoff. */
  healthyAfterMs?: number
  stopTimeoutMs?: number
}

export interface Supervisor {
  /** Call after each commit (the write queue's onCommit). */
  noteCommit(at?: number): void
  status(now?: number): ReplicationStatus
  /** SIGTERM (Litestream syncs every replica, then exits 0), SIGKILL after the deadline. */
  stop(): Promise<StopOutcome>
}

function withFields(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.keys(fields).length === 0 ? {} : { litestream: fields }
}

// Ten monitor intervals (100 ms): by then Litestream has opened the database and can sync it.
const SETTLE_MS = 1000

// util-linux's setpriv: Litestream gets SIGTERM (and makes its final sync) when the server dies
// without stopping it (SIGKILL, a crash); an orphan would keep its lock and race the next one.
const SETPRIV = '/usr/bin/setpriv'

/**
 * `litestream replicate` as a child of the server (docs/DECISIONS.md says why not `-exec`): its
 * JSON log goes to ours, level kept, secrets scrubbed; it is started again with backoff when it
 * ends; /health reads its state. Never the npm wrapper's `.bin/litestream`: it passes on neither
 * signals nor exit codes.
 */
export function superviseLitestream(opts: SupervisorOptions): Supervisor {
  const { log, redact } = opts
  const firstRetryMs = opts.firstRetryMs ?? 1000
  const longestRetryMs = opts.longestRetryMs ?? 30_000
  const healthyAfterMs = opts.healthyAfterMs ?? 60_000
  const unshipped = new Unshipped()
  let child: ChildProcess | null = null
  let stopping = false
  let retryMs = firstRetryMs
  let restartTimer: NodeJS.Timeout | null = null
  let startedAt = 0
  let restarts = 0
  let lastSyncAt: number | null = null
  let lastError: string | null = null
  // Litestream is down (ended, restart pending) / its replica fails: the two ways of failing.
  let down: Failing | null = null
  let replicaFailing: Failing | null = null
  const closingErrors: ClosingError[] = []

  function start(): void {
    const args = ['replicate', '-config', opts.configPath, '-no-expand-env']
    const [command, argv] = existsSync(SETPRIV)
      ? [SETPRIV, ['--pdeathsig', 'TERM', '--', opts.binary, ...args]]
      : [opts.binary, args]
    const started = spawn(command, argv, { env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] })
    child = started
    startedAt = Date.now()
    createInterface({ input: started.stdout as NodeJS.ReadableStream }).on('line', onLine)
    createInterface({ input: started.stderr as NodeJS.ReadableStream }).on('line', onLine)
    started.once('error', (error) => {
      log('error', `litestream could not be started: ${error.message}`)
      if (started.pid === undefined) onExit(started, null, null)
    })
    // 'close', not 'exit': by then every line it wrote (its final sync's) has been read.
    started.once('close', (code, signal) => onExit(started, code, signal))
    if (started.pid !== undefined) opts.onRunning?.(true)
  }

  function onLine(text: string): void {
    const line = parseLine(text)
    const fields = redactValue(line.fields, redact) as Record<string, unknown>
    const msg = redact(line.msg)
    if (line.shippedUpTo !== null) shipped(line)
    if (line.msg === 'replicating to') down = null
    if (line.level === 'error') onError(line, msg, fields)
    else log(line.level, `litestream: ${msg}`, withFields(fields))
  }

  function shipped(line: LitestreamLine): void {
    unshipped.shipped(line.shippedUpTo as number)
    lastSyncAt = line.at
    down = null
    if (replicaFailing === null) return
    log('info', 'replication works again', { failingSinceMs: line.at - replicaFailing.since })
    replicaFailing = null
  }

  // Litestream repeats a failing replica's error every second: the first is an error, the rest debug.
  function onError(line: LitestreamLine, msg: string, fields: Record<string, unknown>): void {
    const message = redact(line.error ?? line.msg)
    lastError = message
    // Our SIGTERM cancels its context: the checkpoint of its close then fails, after its final sync.
    if (stopping && /context canceled/.test(message)) {
      log('warn', `litestream: ${msg}: ${message} (after our SIGTERM)`, withFields(fields))
      return
    }
    // Closing, Litestream 0.3 may race itself over a WAL segment of a file replica (one writer
    // renames the temporary file the other then fails to find) and say so after a final sync that
    // shipped everything. Whether an operator must act is known only once it has ended.
    // The same error repeated (a replica still failing) is held once, as it is logged once while running.
    if (stopping) {
      const held = `litestream: ${msg}${line.error ? `: ${message}` : ''}`
      if (!closingErrors.some((error) => error.msg === held))
        closingErrors.push({ msg: held, fields: withFields(fields) })
      return
    }
    const repeated = replicaFailing !== null
    if (replicaFailing === null) replicaFailing = { since: line.at, message }
    else replicaFailing.message = message
    log(repeated ? 'debug' : 'error', `litestream: ${msg}${line.error ? `: ${message}` : ''}`, withFields(fields))
  }

  function onExit(exited: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== exited) return // already handled (an 'error' without a process, then 'exit')
    child = null
    opts.onRunning?.(false)
    if (stopping) return
    const now = Date.now()
    if (now - startedAt >= healthyAfterMs) retryMs = firstRetryMs
    const how = signal ?? `exit code ${code}`
    down = { since: now, message: `litestream ended (${how})${lastError ? `: ${lastError}` : ''}; restarting` }
    log('error', `litestream ended (${how}); starting it again in ${retryMs} ms`, { code, signal })
    restartTimer = setTimeout(() => {
      restartTimer = null
      restarts++
      start()
    }, retryMs)
    retryMs = Math.min(retryMs * 2, longestRetryMs)
  }

  async function stop(): Promise<StopOutcome> {
    stopping = true
    if (restartTimer) clearTimeout(restartTimer)
    // Litestream opens the database at its first monitor tick; stopped before that, it makes no
    // final sync at all (seen when it was stopped right after a restart).
    const young = startedAt + SETTLE_MS - Date.now()
    if (child !== null && young > 0) await new Promise((resolve) => setTimeout(resolve, young))
    const running = child
    const unshippedMs = () => unshipped.lagMs(Date.now())
    if (running === null)
      return {
        code: null,
        signal: null,
        killed: false,
        wasRunning: false,
        lastError,
        unshippedMs: unshippedMs(),
        closingErrors,
      }
    return new Promise((resolve) => {
      let killed = false
      const killer = setTimeout(() => {
        killed = true
        running.kill('SIGKILL')
      }, opts.stopTimeoutMs ?? 5000)
      running.once('close', (code, signal) => {
        clearTimeout(killer)
        resolve({ code, signal, killed, wasRunning: true, lastError, unshippedMs: unshippedMs(), closingErrors })
      })
      running.kill('SIGTERM')
    })
  }

  start()
  return {
    noteCommit: (at = Date.now()) => unshipped.note(at),
    status: (now = Date.now()) => ({
      running: child !== null,
      lagMs: unshipped.lagMs(now),
      lastSyncAt,
      restarts,
      failing: down ?? replicaFailing,
    }),
    stop,
  }
}
