import fp from 'fastify-plugin'

/**
 * A graceful stop ends keep-alive connections with their last answer. Fastify closes the
 * connections that are idle when it stops, and refuses new requests with 503, but a connection
 * whose request was in flight then stays open, idle, until its keep-alive timeout (72 s): the
 * close waits for it, the database stays open, and after 10 s the process is ended with exit
 * code 1 instead of closing the database and letting Litestream make its final sync. So once the
 * stop begins, answers carry `Connection: close`, and a connection idle after its answer is closed.
 */
export default fp(
  async function closeKeepAlive(fastify) {
    let closing = false
    fastify.addHook('preClose', async function stopKeepingAlive() {
      closing = true
    })
    // Callback hooks, not async ones: they run on every answer, and a promise each costs more
    // than the check (docs/PERFORMANCE.md).
    fastify.addHook('onSend', function lastAnswer(_request, reply, payload, done) {
      if (closing) reply.header('connection', 'close')
      done(null, payload)
    })
    fastify.addHook('onResponse', function closeIfIdle(_request, _reply, done) {
      // An answer whose headers went out before the stop began: its connection is idle now.
      if (closing) fastify.server.closeIdleConnections()
      done()
    })
  },
  { name: 'close-keep-alive', fastify: '5.x' },
)
