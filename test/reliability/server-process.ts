import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync, readFileSync } from 'node:fs'

export interface ServerProcess {
  child: ChildProcess
  base: string
  output: () => string
}

/** The server that SIGKILLs itself right after its first commit that stored something. */
export const KILL_AFTER_COMMIT_SERVER = 'test/reliability/kill-after-commit-server.ts'

/**
 * Starts server.ts (or another entry that starts it, such as KILL_AFTER_COMMIT_SERVER) as its own
 * process on a database file, resolving once it listens. `detached`: in a process group of its
 * own, so that the server and its children (Litestream) can be killed at once, as a power cut would.
 */
export function startServer(
  env: Record<string, string>,
  entry = 'server.ts',
  { detached = false } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import=tsx', entry], {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_MAX: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  })
  return listening(child)
}

/** Resolves once the server in `child` logs where it listens; rejects when it exits first. */
export function listening(child: ChildProcess): Promise<ServerProcess> {
  let text = ''
  const collect = (chunk: Buffer) => {
    text += chunk
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/i.exec(text)
      if (match) {
        clearInterval(timer)
        resolve({ child, base: match[1] as string, output: () => text })
      }
    }, 25)
    child.once('exit', (code) => {
      clearInterval(timer)
      reject(new Error(`server exited with ${code}: ${text}`))
    })
  })
}

export async function stopServer(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (server.child.exitCode !== null) return server.child.exitCode
  server.child.kill(signal)
  const [code] = await once(server.child, 'exit')
  return code as number | null
}

/** The processes `pid` started that run `command` (/proc/PID/comm), e.g. its Litestream. */
export function childrenNamed(pid: number, command: string): number[] {
  const found: number[] = []
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
    for (const child of children === '' ? [] : children.split(' ').map(Number)) {
      try {
        if (readFileSync(`/proc/${child}/comm`, 'utf8').trim() === command) found.push(child)
      } catch {
        // ended meanwhile
      }
    }
  }
  return found
}

/** The lines a server logged at level error (50) or above: a test that expects none shows these, not the whole log. */
export function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => /"level":(5|6)0\b/.test(line))
}
