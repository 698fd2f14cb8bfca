import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { BOOTSTRAP_TOKEN_FILE } from '../start-server.js'
import { listening, stopServer } from './reliability/server-process.js'

const serverEnv = (path: string) => ({ ...process.env, DATABASE_PATH: path, PORT: '0', LOG_LEVEL: 'info' })

/** A start that must fail: its exit code and stderr. A server that listens anyway is stopped at once. */
async function failedStart(path: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import=tsx', 'server.ts'], {
    env: serverEnv(path),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  child.stdout.on('data', (chunk) => {
    if (/listening/i.test(String(chunk))) child.kill('SIGKILL')
  })
  const [code] = await once(child, 'exit')
  return { code: code as number | null, stderr }
}

function tokenCount(path: string): number {
  const db = new BetterSqlite3(path, { readonly: true })
  try {
    return db.prepare('SELECT count(*) FROM tokens').pluck().get() as number
  } finally {
    db.close()
  }
}

for (const [what, plant] of [
  ['a directory', (file: string) => mkdirSync(file)],
  ['a symbolic link', (file: string) => symlinkSync('/nonexistent/elsewhere', file)],
] as const) {
  t.test(
    `${what} at the first-admin-token path: the start fails clearly, no token is made, the next start makes it`,
    async (t) => {
      const dir = t.testdir()
      const path = join(dir, 'facility.db')
      const file = join(dir, BOOTSTRAP_TOKEN_FILE)
      plant(file)

      const first = await failedStart(path)
      t.equal(first.code, 1, 'exit code 1')
      t.match(first.stderr, new RegExp(`${BOOTSTRAP_TOKEN_FILE}, which is ${what}; remove it`))
      t.notMatch(first.stderr, /\n\s+at /, 'a message, not a stack trace')
      t.equal(tokenCount(path), 0, 'no token was made that nobody could read')

      rmSync(file, { recursive: true })
      const server = await listening(spawn(process.execPath, ['--import=tsx', 'server.ts'], { env: serverEnv(path) }))
      t.teardown(() => stopServer(server))
      const token = readFileSync(file, 'utf8').trim()
      t.match(token, /^fs_[0-9a-f]{24}_/, 'the token is delivered once the place is free')
      t.equal(statSync(file).mode & 0o777, 0o600)
      const audit = await fetch(`${server.base}/audit`, { headers: { authorization: `Bearer ${token}` } })
      t.equal(audit.status, 200, 'an admin token that works')
      t.equal(tokenCount(path), 1)
    },
  )
}
