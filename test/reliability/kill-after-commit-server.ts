import { startServer } from '../../start-server.js'

/**
 * The server for test/reliability/idempotency-crash.test.ts: it dies right after the first
 * commit that stored something, before any answer is sent, the way a power cut would. A test-only
 * entry, so no switch for it reaches the production server.
 */
await startServer(process.env, {
  beforeListen: (app) => app.writes.onCommit(() => process.kill(process.pid, 'SIGKILL')),
})
