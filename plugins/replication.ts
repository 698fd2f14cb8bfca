import fp from 'fastify-plugin'
import {
  checkLitestreamConfig,
  litestreamBinary,
  readReplicaExtras,
  secretsOfExtras,
  writeLitestreamConfig,
} from '../db/replication/litestream-config.js'
import { redactor, secretsOfEnv } from '../db/replication/log-lines.js'
import {
  type ReplicationStatus,
  type StopOutcome,
  type Supervisor,
  superviseLitestream,
} from '../db/replication/supervisor.js'
import { parseReplicaUrl } from '../lib/replica-url.js'

declare module 'fastify' {
  interface FastifyInstance {
    replication: Replication
  }
}

export interface Replication {
  /** null when REPLICA_URL is not set. */
  status(): ReplicationStatus | null
}

export interface ReplicationOptions {
  /** REPLICA_URL; '' turns replication off. */
  url: string
  /** REPLICA_CONFIG; '' for none. */
  configFile: string
  /** LITESTREAM_PATH; '' for the bundled binary. */
  litestreamPath: string
  databasePath: string
  /** Litestream's environment, where its credentials are (LITESTREAM_ACCESS_KEY_ID ...). */
  env?: NodeJS.ProcessEnv
}

// SQLite's default, which the server goes back to while Litestream is down.
const AUTOCHECKPOINT_PAGES = 1000
// Within close-with-grace's 10 s (server.ts); a final sync of a ward's last second takes milliseconds.
const STOP_TIMEOUT_MS = 8000

/**
 * Continuous replication (docs/OPERATIONS.md, "Standby and restore"): Litestream, supervised,
 * copies every commit to REPLICA_URL within about a second. Settings are checked before anything
 * starts (a bad one stops the start, like any bad setting); Litestream itself starts once the
 * service is ready, after the migrations.
 *
 * Register this plugin BEFORE the database plugin: Fastify closes plugins in the reverse order,
 * so Litestream is stopped after the database is closed, and its final sync carries the last
 * commit. The write queue is reached at onReady, when the database plugin has made it.
 */
export default fp<ReplicationOptions>(
  async function replicationPlugin(fastify, opts) {
    if (opts.url === '') {
      fastify.decorate('replication', { status: () => null })
      return
    }
    const env = opts.env ?? process.env
    const target = parseReplicaUrl(opts.url)
    const binary = litestreamBinary(opts.litestreamPath)
    const extras = opts.configFile === '' ? [] : readReplicaExtras(opts.configFile)
    const redact = redactor([...target.secrets, ...secretsOfExtras(extras), ...secretsOfEnv(env)])
    const configPath = writeLitestreamConfig(`${opts.databasePath}.litestream.yml`, opts.databasePath, {
      target,
      extras,
    })
    checkLitestreamConfig(binary, configPath, redact)
    let supervisor: Supervisor | null = null

    fastify.addHook('onReady', async function startReplication() {
      const db = fastify.db
      fastify.log.info(
        { replica: target.shown, config: configPath },
        `replicating ${opts.databasePath} to ${target.shown}`,
      )
      supervisor = superviseLitestream({
        binary,
        configPath,
        env,
        redact,
        stopTimeoutMs: STOP_TIMEOUT_MS,
        log: (level, msg, fields) => fastify.log[level](fields ?? {}, msg),
        // While Litestream runs it alone checkpoints: one by the server could restart the WAL
        // before Litestream copied it, and Litestream would start over with a full snapshot.
        onRunning: (running) => {
          if (db.open) db.pragma(`wal_autocheckpoint = ${running ? 0 : AUTOCHECKPOINT_PAGES}`)
        },
      })
      const running = supervisor
      fastify.writes.onCommit(() => running.noteCommit())
    })

    fastify.addHook('onClose', async function stopReplicationLast() {
      if (supervisor === null) return
      logStop(await supervisor.stop())
    })

    // Whether the replica has every commit is read from what Litestream said it shipped, not from
    // its exit code: after our SIGTERM it often ends with 1 ("context canceled": the checkpoint of
    // its close is cut short, after the final sync), and a failed final sync may leave no trace.
    function logStop(outcome: StopOutcome): void {
      const { code, signal, killed, wasRunning, lastError, unshippedMs, closingErrors } = outcome
      // What it reported while closing is an error only where the replica lacks commits.
      for (const { msg, fields } of closingErrors)
        if (unshippedMs > 0) fastify.log.error(fields, msg)
        else fastify.log.warn(fields, `${msg} (while closing, after a final sync that shipped every commit)`)
      const how = killed
        ? `was killed ${STOP_TIMEOUT_MS} ms after SIGTERM`
        : `ended with ${signal ?? `exit code ${code}`}`
      if (!wasRunning)
        fastify.log.warn('litestream was not running at shutdown: the replica gets the last changes at its next start')
      else if (unshippedMs > 0)
        fastify.log.error(
          { code, signal, lastError },
          `litestream ${how}, the commits of the last ${unshippedMs} ms not on the replica: they reach it at its next start`,
        )
      else if (code === 0) fastify.log.info('litestream stopped after its final sync: every commit is on the replica')
      else
        fastify.log.warn(
          { code, signal, lastError },
          `litestream ${how} after its final sync: every commit is on the replica`,
        )
    }

    fastify.decorate('replication', { status: () => supervisor?.status() ?? null })
  },
  { name: 'replication', fastify: '5.x' },
)
