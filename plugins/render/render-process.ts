/**
 * The service's side of the render process (see render-child.ts for why isolates live in a
 * child process). One process serves all renders, each in its own isolate; if it dies, the
 * renders it was running fail with a 422 and the next render starts a new process.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { serialize } from 'node:v8'
import { renderError } from './errors.js'
import type { IsolateLimits, RenderReply, RenderRequest } from './protocol.js'

export interface RenderProcess {
  run(body: string, data: Record<string, unknown>): Promise<string>
  close(): void
}

interface Pending {
  resolve(html: string): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

interface Connection {
  child: ChildProcess
  ready: Promise<void>
  pending: Map<number, Pending>
  killedByUs: boolean
}

/** Only a hung isolate outlives its own time limit by this much; the process is then killed. */
const WATCHDOG_GRACE_MS = 5000
const STARTUP_TIMEOUT_MS = 30_000

function childCommand(): { entry: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = fileURLToPath(new URL(`./render-child.${fromSource ? 'ts' : 'js'}`, import.meta.url))
  // The process's own heap holds only messages; isolates have their own limits.
  const execArgv = ['--no-node-snapshot', '--max-old-space-size=128']
  if (fromSource) execArgv.push(`--import=${import.meta.resolve('tsx')}`)
  return { entry, execArgv }
}

export function createRenderProcess(limits: IsolateLimits): RenderProcess {
  let current: Connection | undefined
  let closed = false
  let nextId = 1

  function connect(): Connection {
    const { entry, execArgv } = childCommand()
    const child = fork(entry, [], {
      execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const connection: Connection = { child, ready: Promise.resolve(), pending: new Map(), killedByUs: false }
    connection.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => kill(connection), STARTUP_TIMEOUT_MS)
      child.on('message', (reply: RenderReply) => {
        if (!('ready' in reply)) return onReply(connection, reply)
        clearTimeout(timer)
        resolve()
      })
      child.on('exit', (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`the render process stopped (${signal ?? code})`))
        onExit(connection, signal)
      })
      child.on('error', () => kill(connection))
    })
    connection.ready.catch(() => undefined)
    return connection
  }

  function kill(connection: Connection): void {
    connection.killedByUs = true
    if (current === connection) current = undefined
    connection.child.kill('SIGKILL')
  }

  /** An idle render process must not keep the service alive; a busy one must. */
  function updateRef({ child, pending }: Connection): void {
    if (pending.size > 0) {
      child.ref()
      child.channel?.ref()
    } else {
      child.unref()
      child.channel?.unref()
    }
  }

  function settle(connection: Connection, id: number): Pending | undefined {
    const job = connection.pending.get(id)
    if (!job) return undefined
    clearTimeout(job.timer)
    connection.pending.delete(id)
    updateRef(connection)
    return job
  }

  function onReply(connection: Connection, reply: Exclude<RenderReply, { ready: true }>): void {
    const job = settle(connection, reply.id)
    if (reply.ok) job?.resolve(reply.html)
    else job?.reject(renderError(reply.code, reply.message))
  }

  /** A kill we did not order is isolated-vm giving up on an isolate (render-child.ts) or the OOM killer. */
  function onExit(connection: Connection, signal: NodeJS.Signals | null): void {
    if (current === connection) current = undefined
    const outOfMemory = !connection.killedByUs && (signal === 'SIGKILL' || signal === 'SIGABRT')
    const error = outOfMemory
      ? renderError('RENDER_MEMORY_LIMIT', `a template exceeded the memory limit of ${limits.memoryMb} MB`)
      : renderError('RENDER_FAILED', 'the render was interrupted; please try again')
    for (const id of [...connection.pending.keys()]) settle(connection, id)?.reject(error)
  }

  function onWatchdog(connection: Connection, id: number): void {
    settle(connection, id)?.reject(
      renderError('RENDER_TIMEOUT', `the template exceeded the time limit of ${limits.timeoutMs} ms`),
    )
    kill(connection)
  }

  function send(connection: Connection, id: number, request: RenderRequest): void {
    try {
      connection.child.send(request, (error: Error | null) => {
        if (error) settle(connection, id)?.reject(renderError('RENDER_FAILED', 'the render process is not reachable'))
      })
    } catch {
      settle(connection, id)?.reject(renderError('RENDER_FAILED', 'the render process is not reachable'))
    }
  }

  /** The structured-clone bytes of the data (see protocol.ts); what cannot be cloned fails here. */
  function encode(data: Record<string, unknown>): Uint8Array {
    try {
      return serialize(data)
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      throw renderError('RENDER_FAILED', `the render data cannot be copied into the sandbox: ${reason}`)
    }
  }

  async function run(body: string, source: Record<string, unknown>): Promise<string> {
    if (closed) throw new Error('the renderer is closed')
    const data = encode(source)
    current ??= connect()
    const connection = current
    await connection.ready
    const id = nextId++
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => onWatchdog(connection, id), limits.timeoutMs + WATCHDOG_GRACE_MS)
      connection.pending.set(id, { resolve, reject, timer })
      updateRef(connection)
      send(connection, id, { id, body, data, limits })
    })
  }

  return {
    run,
    close() {
      closed = true
      if (!current) return
      const connection = current
      const error = new Error('the renderer is closed')
      for (const id of [...connection.pending.keys()]) settle(connection, id)?.reject(error)
      kill(connection)
    },
  }
}
