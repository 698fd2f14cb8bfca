import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'

export interface MetricsListenerOptions {
  host: string
  port: number
  /** The bearer token a scraper must send; empty: none (only allowed on loopback, lib/metrics-settings.ts). */
  token: string
  registry: Registry
  log: { error(fields: object, message: string): void }
}

export interface MetricsListener {
  start(): Promise<number>
  close(): Promise<void>
}

const digest = (text: string) => createHash('sha256').update(text).digest()

/** Compared by their digests: equal lengths, and no early exit that tells how much of a guess was right. */
function tokenMatches(authorization: string | undefined, expected: Buffer): boolean {
  const presented = /^bearer +(\S+)$/i.exec(authorization ?? '')?.[1]
  return presented !== undefined && timingSafeEqual(digest(presented), expected)
}

function answer(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers })
  res.end(text)
}

/**
 * The metrics listener: GET /metrics and nothing else, apart from the API's port, so that what a
 * ward does (its admissions, its sign-in failures) is never answered to the API's callers.
 */
export function createMetricsListener(opts: MetricsListenerOptions): MetricsListener {
  const expected = opts.token === '' ? null : digest(opts.token)

  async function scrape(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '').split('?')[0]
    if (path !== '/metrics') return answer(res, 404, 'not found: the metrics are at /metrics\n')
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'GET only\n', { allow: 'GET, HEAD' })
    if (expected !== null && !tokenMatches(req.headers.authorization, expected))
      return answer(res, 401, 'a bearer token (METRICS_TOKEN) is needed\n', {
        'www-authenticate': 'Bearer realm="metrics"',
      })
    try {
      const text = await opts.registry.metrics()
      res.writeHead(200, { 'content-type': opts.registry.contentType, 'cache-control': 'no-store' })
      res.end(req.method === 'HEAD' ? undefined : text)
    } catch (error) {
      opts.log.error({ err: error }, 'metrics: a scrape failed')
      answer(res, 500, 'the metrics could not be collected; see the service log\n')
    }
  }

  const server: Server = createServer({ requestTimeout: 10_000, headersTimeout: 5000 }, (req, res) => {
    void scrape(req, res)
  })
  server.keepAliveTimeout = 65_000

  return {
    start() {
      return new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen({ host: opts.host, port: opts.port }, () => {
          server.off('error', reject)
          resolve((server.address() as AddressInfo).port)
        })
      })
    },
    close() {
      return new Promise((resolve) => {
        if (!server.listening) return resolve()
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
