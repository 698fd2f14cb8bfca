import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { Config } from '../../config.js'
import { buildTestApp } from '../helper.js'

export interface SseEvent {
  id: string | undefined
  event: string
  data: string
}

/** A fresh test app listening on a free port: streams need a real connection, not inject. */
/**
 * The app on a real socket, on a database file of its own (not in memory): as in production, each
 * commit's sync runs off the event loop and the hub reads the log only once it is on disk.
 */
export async function listeningApp(t: Test, overrides: Partial<Config> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'feed-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const built = await buildTestApp(t, { DATABASE_PATH: join(dir, 'ward.db'), ...overrides })
  await built.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = built.app.server.address() as AddressInfo
  return { ...built, base: `http://127.0.0.1:${port}` }
}

/**
 * A minimal reader of a text/event-stream, written from the WHATWG rules (fields `id`, `event`,
 * `data`; a line starting with a colon is a comment; a blank line ends a message), so the tests
 * read the bytes the server sends without trusting its own framing code.
 */
export class RawStream {
  readonly events: SseEvent[] = []
  comments = 0
  status = 0
  headers: IncomingMessage['headers'] = {}
  body = ''
  ended = false
  errored = false
  private buffer = ''
  private waiters: (() => void)[] = []
  private response: IncomingMessage | undefined
  private readonly req: ReturnType<typeof httpRequest>

  /** `paused`: reads nothing until resume(), so the server's writes back up (a slow reader). */
  constructor(url: string, headers: Record<string, string> = {}, options: { paused?: boolean } = {}) {
    this.req = httpRequest(url, { headers: { accept: 'text/event-stream', ...headers } })
    this.req.on('response', (res) => {
      this.response = res
      this.status = res.statusCode ?? 0
      this.headers = res.headers
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => this.take(chunk))
      res.on('end', () => this.finish(false))
      res.on('error', () => this.finish(true))
      res.on('aborted', () => this.finish(true))
      // Before the first 'data' is emitted (next tick): not a byte of the body is read.
      if (options.paused) res.pause()
      this.notify()
    })
    this.req.on('error', () => this.finish(true))
    this.req.end()
  }

  /** Resolves once `check` holds (re-checked on every message), or rejects after `ms`. */
  until(check: (s: RawStream) => boolean, ms = 10_000, what = 'the stream'): Promise<void> {
    if (check(this)) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
      const waiter = () => {
        if (!check(this)) return this.waiters.push(waiter)
        clearTimeout(timer)
        resolve()
      }
      this.waiters.push(waiter)
    })
  }

  /** Events named like the resources' changes (not ready/reset). */
  changes(): SseEvent[] {
    return this.events.filter((e) => e.event !== 'ready' && e.event !== 'reset')
  }

  lastId(): string | undefined {
    return this.events.at(-1)?.id
  }

  close(): void {
    this.req.destroy()
    this.response?.destroy()
  }

  /** Stops reading: once Node's and the kernel's buffers are full, the server's writes wait. */
  pause(): void {
    this.response?.pause()
  }

  resume(): void {
    this.response?.resume()
  }

  private take(chunk: string): void {
    if (this.status !== 200) {
      this.body += chunk
      return
    }
    this.buffer += chunk
    let end = this.buffer.indexOf('\n\n')
    while (end >= 0) {
      this.parse(this.buffer.slice(0, end))
      this.buffer = this.buffer.slice(end + 2)
      end = this.buffer.indexOf('\n\n')
    }
    this.notify()
  }

  private parse(block: string): void {
    let id: string | undefined
    let event = 'message'
    const data: string[] = []
    let fields = 0
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments++
        continue
      }
      const colon = line.indexOf(':')
      const name = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      fields++
      if (name === 'id') id = value
      else if (name === 'event') event = value
      else if (name === 'data') data.push(value)
    }
    if (fields > 0) this.events.push({ id, event, data: data.join('\n') })
  }

  private finish(errored: boolean): void {
    if (this.ended) return
    this.ended = true
    this.errored = errored
    this.notify()
  }

  private notify(): void {
    const waiting = this.waiters.splice(0)
    for (const waiter of waiting) waiter()
  }
}

/**
 * Opens a stream and waits for its answer: the status and headers, and for an error its whole
 * body. A new stream's first message (ready) needs `firstMessage`; a resumed one may have none.
 */
export async function openStream(
  url: string,
  headers: Record<string, string> = {},
  options: { paused?: boolean } = {},
): Promise<RawStream> {
  const stream = new RawStream(url, headers, options)
  await stream.until((s) => s.status !== 0 || s.ended, 10_000, 'the answer')
  if (stream.status !== 200) await stream.until((s) => s.ended, 10_000, 'the error body')
  return stream
}

export async function firstMessage(stream: RawStream): Promise<SseEvent> {
  await stream.until((s) => s.events.length > 0, 10_000, 'a first message')
  return stream.events[0] as SseEvent
}

/** Polls a condition on the server's state (not on the stream's messages) until it holds. */
export async function waitUntil(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

export function json(data: string): unknown {
  return JSON.parse(data)
}
