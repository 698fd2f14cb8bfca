import type { IncomingMessage } from 'node:http'
import type { FastifyReply } from 'fastify'
import fp from 'fastify-plugin'

/** How much of a refused body is read and thrown away before the answer goes out (nginx: lingering_time). */
export interface LingerBound {
  maxBytes: number
  maxMs: number
}

export const LINGER: LingerBound = { maxBytes: 32 * 1024 * 1024, maxMs: 10_000 }

function closesConnection(reply: FastifyReply): boolean {
  return /\bclose\b/i.test(String(reply.getHeader('connection') ?? ''))
}

/** `complete`: Node's parser has the whole body; `readableEnded`: so has the reader (as with inject). */
export function hasUnreadBody(raw: IncomingMessage): boolean {
  return !raw.complete && !raw.readableEnded && !raw.destroyed
}

/** Reads and discards what is left of a request body, until it ends or the bound is reached. */
export function discardRest(raw: IncomingMessage, bound: LingerBound): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0
    const timer = setTimeout(finish, bound.maxMs)
    function count(chunk: Buffer) {
      seen += chunk.length
      if (seen > bound.maxBytes) finish()
    }
    function finish() {
      clearTimeout(timer)
      raw.off('data', count).off('end', finish).off('close', finish).off('error', finish)
      resolve()
    }
    raw.on('data', count).once('end', finish).once('close', finish).once('error', finish)
    raw.resume()
  })
}

/**
 * A body refused while it is still arriving (413 over the size limit) is answered with
 * `Connection: close`. Closing a socket with unread bytes makes the kernel reset the connection,
 * and a client still sending (fetch, without `Expect: 100-continue`) then loses the answer to
 * EPIPE or ECONNRESET. So, as nginx's lingering close does, the rest of the body is read and thrown
 * away first (within a bound), then the answer is sent and the connection closed cleanly.
 */
export default fp<Partial<LingerBound>>(
  async function lingeringClose(fastify, opts) {
    const bound = { ...LINGER, ...opts }
    // A callback hook: almost every answer has nothing left to read, and skips the promise.
    fastify.addHook('onSend', function drainBeforeClosing(request, reply, payload, done) {
      if (!hasUnreadBody(request.raw) || !closesConnection(reply)) return done(null, payload)
      discardRest(request.raw, bound).then(() => {
        // As Fastify does for an async hook: a throw in the rest of the chain becomes the error.
        try {
          done(null, payload)
        } catch (error) {
          done(error as Error)
        }
      })
    })
  },
  { name: 'lingering-close', fastify: '5.x' },
)
