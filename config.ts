import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { FHIR_SETTINGS } from './lib/fhir-settings.js'
import { HL7_SETTINGS, type Hl7Settings, hl7Problems } from './lib/hl7-settings.js'
import { METRICS_SETTINGS, type MetricsSettings, metricsProblems } from './lib/metrics-settings.js'
import { parseReplicaUrl, shownReplicaUrl } from './lib/replica-url.js'
import { SIGN_IN_SETTINGS, type SignInSettings, signInProblems } from './lib/sign-in-settings.js'
import { readTrustProxy } from './lib/trust-proxy.js'

/**
 * The whole configuration, read from the environment. The Static type of this schema is the
 * config type, so the two never drift apart.
 */
export const ConfigSchema = Type.Object({
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port of the API' }),
  HOST: Type.String({
    minLength: 1,
    default: '127.0.0.1',
    description: 'address the API listens on (0.0.0.0: every address of the machine)',
  }),
  DATABASE_PATH: Type.String({
    minLength: 1,
    default: './data/facility.db',
    description:
      'the SQLite database file, created with its folder (mode 0700) when missing; the first admin token and the copies kept before migrations go beside it',
  }),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'the least level written to the log (JSON lines on stdout); silent: none' },
  ),
  BED_POLICY: Type.Union([Type.Literal('exclusive'), Type.Literal('shared')], {
    default: 'exclusive',
    description:
      'exclusive: one active occupant per bed and facility, enforced by the database; shared: beds may be shared (going back to exclusive fails at start while a bed has two)',
  }),
  BED_EXPECTED_HOURS: Type.Integer({
    minimum: 0,
    maximum: 8760,
    default: 24,
    description:
      'how long a pending admission or transfer (ADT A14, A15) keeps its bed expected when neither the admission nor the cancel comes (0: until one comes)',
  }),
  DURABLE_SYNC: Type.Union([Type.Literal('background'), Type.Literal('commit')], {
    default: 'background',
    description:
      'where a commit waits for the disk: background (the fsync of the WAL runs in a worker thread while other requests go on; every answer waits for it) or commit (inside COMMIT, stalling the server meanwhile)',
  }),
  DATABASE_BUSY_TIMEOUT_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: 5000,
    description:
      'how long a write waits for a lock held by another process (sqlite3 shell, CLI) before it is answered 503 DATABASE_BUSY; the wait never blocks other requests',
  }),
  DATABASE_CACHE_BYTES: Type.Integer({
    minimum: 1_048_576,
    maximum: 1_073_741_824,
    default: 16_777_216,
    description:
      "memory for SQLite's page cache (pages of the database file kept in memory, filled by reads and writes)",
  }),
  IDEMPOTENCY_KEY_TTL_HOURS: Type.Integer({
    minimum: 1,
    maximum: 8760,
    default: 24,
    description: 'how long the answer to a request with an Idempotency-Key is kept for retries',
  }),
  BODY_LIMIT: Type.Integer({
    minimum: 1024,
    default: 1_048_576,
    description: 'largest request body in bytes; a larger one is answered 413',
  }),
  REQUEST_TIMEOUT_MS: Type.Integer({
    minimum: 0,
    default: 30_000,
    description: 'a request (headers and body) not received within this is cut off with a 408; 0 turns it off',
  }),
  RATE_LIMIT_MAX: Type.Integer({
    minimum: 0,
    default: 6000,
    description: 'requests per token per window; 0 turns the limit off',
  }),
  RATE_LIMIT_WINDOW_MS: Type.Integer({
    minimum: 1000,
    default: 60_000,
    description: 'the window of RATE_LIMIT_MAX; past the limit a token gets 429 until the window ends',
  }),
  AUTH_FAILURE_LIMIT: Type.Integer({
    minimum: 1,
    default: 20,
    description:
      'failed authentications per address (or per known token id) per window; past it failing requests get 429',
  }),
  AUTH_FAILURE_WINDOW_MS: Type.Integer({
    minimum: 1000,
    default: 900_000,
    description: 'the window of AUTH_FAILURE_LIMIT; a valid token always passes',
  }),
  // Fastify's trustProxy: false, or the proxies' addresses (readTrustProxy below).
  TRUST_PROXY: Type.Union([Type.Literal(false), Type.String({ minLength: 1 })], {
    default: false,
    description:
      "who may name the client in X-Forwarded-For: false (nobody), or the proxies' addresses and CIDR ranges, comma-separated",
  }),
  AUDIT_READS: Type.Boolean({
    default: false,
    description: 'log every read (who read which record or list, when) in the read log, next to the audit of changes',
  }),
  AUDIT_READS_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    default: 365,
    description: 'how long read-log entries are kept',
  }),
  LOG_QUERY_VALUES: Type.Boolean({
    default: false,
    description: 'write full URLs, query values included, to the request log: they name patients; debugging only',
  }),
  // Upper bounds: the timers derived from RENDER_TIMEOUT_MS (compiling may take 5x it, a stuck
  // render worker is ended 2 s after it) stay far below setTimeout's 2^31-1 ms, past which Node
  // fires after 1 ms. Each of RENDER_WORKERS renders may use RENDER_MEMORY_MB (plus the engine's
  // 16 MB) at once, and every rendered page passes as text through its worker's heap (256 MB) and
  // the service's memory.
  RENDER_TIMEOUT_MS: Type.Integer({
    minimum: 10,
    maximum: 60_000,
    default: 1000,
    description: 'time one render may take; compiling may take 5x this, at least 2 s',
  }),
  RENDER_MEMORY_MB: Type.Integer({
    minimum: 8,
    maximum: 1024,
    default: 32,
    description: "memory of one render's engine beyond its own 16 MB; up to RENDER_WORKERS renders run at once",
  }),
  RENDER_MAX_OUTPUT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 16_777_216,
    default: 2_097_152,
    description: 'size of the rendered HTML in UTF-8 bytes',
  }),
  RENDER_WORKERS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 1,
    description:
      'print workers, each running one render at a time: the renders that may run at once (each may use RENDER_MEMORY_MB); more only where prints come in bursts, since each worker holds its own memory (some 25 MB under load)',
  }),
  RENDER_QUEUE_MAX: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    default: 32,
    description:
      "prints of one facility that may wait for a free print worker (facilities' prints take turns); one more is answered 503 RENDER_BUSY with Retry-After (a print whose client hangs up while it waits leaves the queue); 0: none waits",
  }),
  RENDER_CACHE_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1_073_741_824,
    default: 16_777_216,
    description:
      'memory for compiled print layouts, one copy per distinct layout (templates that share a layout share it); 0 compiles every print again',
  }),
  RENDER_COMPILER_IDLE_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    default: 1,
    description:
      'the compile worker idle this long is ended and its memory given back (the next new layout starts it again); 0 keeps it',
  }),
  RENDER_WORKER_IDLE_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 86_400,
    default: 60,
    description:
      'a print worker idle this long is ended and its memory given back (the next print starts one again); 0 keeps them',
  }),
  FEED_RETENTION_HOURS: Type.Integer({
    minimum: 1,
    maximum: 87_600,
    default: 168,
    description: 'how long the live feed keeps events a client may resume from',
  }),
  FEED_HEARTBEAT_MS: Type.Integer({
    minimum: 100,
    maximum: 300_000,
    default: 15_000,
    description: 'interval of the comment line that keeps an idle stream alive through proxies',
  }),
  FEED_POLL_MS: Type.Integer({
    minimum: 10,
    maximum: 10_000,
    default: 250,
    description: 'how often the feed looks for changes committed by other processes (the CLI)',
  }),
  FEED_MAX_STREAMS: Type.Integer({
    minimum: 1,
    default: 2000,
    description: 'live-feed streams open in all; one more is answered 429',
  }),
  FEED_MAX_STREAMS_PER_TOKEN: Type.Integer({
    minimum: 1,
    default: 10,
    description: 'live-feed streams open per token; one more is answered 429',
  }),
  FEED_BUFFER_BYTES: Type.Integer({
    minimum: 16_384,
    maximum: 268_435_456,
    default: 1_048_576,
    description: 'unsent bytes a slow stream may hold before it is closed (the client resumes by id)',
  }),
  NOTIFICATION_PAGE_CACHE_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1_073_741_824,
    default: 16_777_216,
    description:
      'memory for notification pages remembered until the database next changes (a ward polls the same pages); 0 turns it off',
  }),
  WARD_OCCUPANT_PAGE_CACHE_BYTES: Type.Integer({
    minimum: 0,
    maximum: 1_073_741_824,
    default: 8_388_608,
    description:
      'memory for ward occupant list pages remembered until the database next changes (a bed board polls the same lists); 0 turns it off',
  }),
  // Sign-in with the hospital's identity provider (docs/SIGN-IN.md): lib/sign-in-settings.ts.
  ...SIGN_IN_SETTINGS,
  BACKUP_DIR: Type.String({
    default: '',
    description:
      "where scheduled backups go: an existing directory of the service's user, not a link, writable by nobody else, best on another disk; empty: no scheduled backups",
  }),
  BACKUP_INTERVAL_MINUTES: Type.Integer({
    minimum: 1,
    maximum: 10_080,
    default: 60,
    description:
      'how often scheduled backups are taken (only with BACKUP_DIR); one is taken at start when the newest is older',
  }),
  BACKUP_INTERVAL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 604_800,
    default: 0,
    description:
      'the interval of scheduled backups in seconds, in place of BACKUP_INTERVAL_MINUTES (drills and tests); 0: BACKUP_INTERVAL_MINUTES',
  }),
  BACKUP_KEEP: Type.Integer({
    minimum: 1,
    maximum: 10_000,
    default: 48,
    description: 'how many scheduled backups are kept; older ones (by the time in their names) are removed',
  }),
  REPLICA_URL: Type.String({
    default: '',
    description:
      'continuous replication by Litestream to a directory path, file:///..., sftp://[user[:password]@]host[:port]/path or s3://bucket/path; empty: none',
  }),
  REPLICA_CONFIG: Type.String({
    default: '',
    description:
      'a file of Litestream replica settings the URL cannot carry, one `key: value` a line (key-path, endpoint, force-path-style, sync-interval ...); S3 keys come from LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY',
  }),
  LITESTREAM_PATH: Type.String({
    default: '',
    description:
      'the litestream binary (0.3); empty: the one of the optional dependency @flydotio/litestream-linux-x64 (Linux x64; the release executable carries none)',
  }),
  ...HL7_SETTINGS,
  // The operators' metrics (docs/METRICS.md): lib/metrics-settings.ts.
  ...METRICS_SETTINGS,
  // The FHIR R4 endpoint (docs/FHIR.md): lib/fhir-settings.ts.
  ...FHIR_SETTINGS,
})

export type Config = Static<typeof ConfigSchema>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** The checks that involve more than one setting, or more than a type. */
function replicationProblems(config: Config): [string, string][] {
  const problems: [string, string][] = []
  if (config.REPLICA_URL === '') {
    if (config.REPLICA_CONFIG !== '') problems.push(['REPLICA_CONFIG', 'is only read with REPLICA_URL set'])
    return problems
  }
  try {
    parseReplicaUrl(config.REPLICA_URL)
  } catch (error) {
    problems.push(['REPLICA_URL', (error as Error).message])
  }
  if (config.DATABASE_PATH === ':memory:' || config.DATABASE_PATH.startsWith('file:'))
    problems.push(['REPLICA_URL', 'needs DATABASE_PATH to name a database file (Litestream replicates a file)'])
  return problems
}

function explain(key: string, message: string): string {
  const choices = (ConfigSchema.properties as Record<string, { anyOf?: { const?: unknown }[] }>)[key]?.anyOf
  return choices ? `must be one of ${choices.map((c) => String(c.const)).join(', ')}` : message
}

/** Only the variables the schema names are read; everything else in the environment is ignored. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const picked: Record<string, unknown> = {}
  for (const key of Object.keys(ConfigSchema.properties)) {
    const raw = env[key]
    if (raw !== undefined && raw !== '') picked[key] = raw
  }
  // Read by hand: a union of three forms that TypeBox would convert by guessing.
  const trustProxy = readTrustProxy(env.TRUST_PROXY)
  picked.TRUST_PROXY = 'value' in trustProxy ? trustProxy.value : false
  const converted = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, picked)) as Record<string, unknown>
  // TypeBox reads integers with parseInt: "1e9" would be 1 and "1.5" 1. Only whole decimal
  // numbers are numbers here; anything else stays text and fails as "Expected integer".
  for (const [key, schema] of Object.entries(ConfigSchema.properties) as [string, { type?: unknown }][]) {
    const raw = env[key]
    if (schema.type === 'integer' && raw && !/^\s*-?\d+\s*$/.test(raw)) converted[key] = raw
  }
  const problems: [string, string][] = [...Value.Errors(ConfigSchema, converted)].map((e) => {
    const key = e.path.replace(/^\//, '')
    return [key, explain(key, e.message)]
  })
  if ('problem' in trustProxy) problems.push(['TRUST_PROXY', trustProxy.problem])
  if (problems.length === 0)
    problems.push(...replicationProblems(converted as Config), ...hl7Problems(converted as Config & Hl7Settings))
  if (problems.length === 0) problems.push(...signInProblems(converted as Config & SignInSettings))
  if (problems.length === 0) problems.push(...metricsProblems(converted as Config & MetricsSettings))
  if (problems.length > 0) {
    const lines = problems.map(([key, message]) => {
      const raw = env[key]
      const shown =
        key === 'METRICS_TOKEN' ? '(hidden)' : key === 'REPLICA_URL' && raw !== undefined ? shownReplicaUrl(raw) : raw
      return `  ${key}=${JSON.stringify(shown)}: ${message}`
    })
    throw new ConfigError(`invalid configuration:\n${[...new Set(lines)].join('\n')}`)
  }
  return converted as Config
}

/** Defaults for every setting, for tests and tools that pass config as options. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), ...overrides }
}
