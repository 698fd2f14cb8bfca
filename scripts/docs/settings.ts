import { OptionalKind } from '@sinclair/typebox'
import { ConfigSchema } from '../../config.js'

/**
 * docs/reference/SETTINGS.md, written from the config schema (config.ts and every settings file it
 * spreads in): each setting's type, allowed values and default come from its TypeBox schema, its
 * meaning from the schema's `description`. `npm run docs` writes it; test/docs/settings-reference.test.ts
 * fails when the committed file differs from what this makes.
 */

interface Area {
  title: string
  about: string
  holds: (name: string) => boolean
}

const prefixed =
  (...prefixes: string[]) =>
  (name: string) =>
    prefixes.some((prefix) => name.startsWith(prefix))
const named =
  (...names: string[]) =>
  (name: string) =>
    names.includes(name)

/** The sections of the reference, in order; a setting goes to the first that holds it. */
export const AREAS: readonly Area[] = [
  {
    title: 'Server',
    about: 'The API listener, its log and the limits of one request.',
    holds: named('PORT', 'HOST', 'LOG_LEVEL', 'LOG_QUERY_VALUES', 'BODY_LIMIT', 'REQUEST_TIMEOUT_MS', 'TRUST_PROXY'),
  },
  {
    title: 'Database',
    about: 'The SQLite file, how writes wait for the disk and for locks, and what is remembered in memory.',
    holds: (name) =>
      prefixed('DATABASE_')(name) ||
      named('DURABLE_SYNC', 'IDEMPOTENCY_KEY_TTL_HOURS')(name) ||
      name.endsWith('_PAGE_CACHE_BYTES'),
  },
  {
    title: 'Tokens and throttling',
    about: 'How many requests a token may make, and how many failed authentications an address may.',
    holds: prefixed('RATE_LIMIT_', 'AUTH_FAILURE_'),
  },
  { title: 'Audit', about: 'The read log beside the audit of changes.', holds: prefixed('AUDIT_') },
  { title: 'Ward', about: 'Rules of the ward itself.', holds: prefixed('BED_') },
  {
    title: 'Printing',
    about: 'The print sandbox that renders form templates (docs/RENDERING.md).',
    holds: prefixed('RENDER_'),
  },
  { title: 'Live feed', about: 'The stream of changes, `GET /events` (docs/EVENTS.md).', holds: prefixed('FEED_') },
  {
    title: 'Backups',
    about: 'Scheduled, checked backups (docs/OPERATIONS.md, "Back up").',
    holds: prefixed('BACKUP_'),
  },
  {
    title: 'Replication',
    about: 'Continuous replication by Litestream to a standby or a bucket (docs/OPERATIONS.md, "Standby and restore").',
    holds: (name) => prefixed('REPLICA_')(name) || name === 'LITESTREAM_PATH',
  },
  {
    title: 'ADT feed (HL7 v2 over MLLP)',
    about: "The listener the hospital's interface engine sends to (docs/ADT.md).",
    holds: prefixed('HL7_'),
  },
  {
    title: 'Sign-in with the hospital account',
    about: "Tokens of the hospital's OpenID provider beside the service's own (docs/SIGN-IN.md).",
    holds: prefixed('OIDC_'),
  },
  { title: 'FHIR', about: 'The FHIR interface (docs/FHIR.md).', holds: prefixed('FHIR_', 'SMART_') },
  {
    title: 'Metrics',
    about: "`GET /metrics` for the hospital's monitoring, on a listener of its own (docs/METRICS.md).",
    holds: prefixed('METRICS_'),
  },
]

const OTHER: Area = { title: 'Other settings', about: '', holds: () => true }

/**
 * Variables read from the environment that are not the server's settings, each deliberately so;
 * test/docs/settings-reference.test.ts fails on any other read outside the schema.
 */
export const OUTSIDE_SCHEMA: Readonly<Record<string, string>> = {
  CACHE_DIRECTORY:
    'the release executable\'s cache for its SQLite addon and served files; systemd sets it from the unit\'s `CacheDirectory=` (docs/OPERATIONS.md, "Where the executable writes")',
  XDG_CACHE_HOME: 'the same cache, as `$XDG_CACHE_HOME/facility-service`, when `CACHE_DIRECTORY` is unset',
  HOME: 'the same cache, as `~/.cache/facility-service`, when neither is set',
  LITESTREAM_ACCESS_KEY_ID:
    'the S3 access key of a replica, read by Litestream itself (the server passes its environment on, and keeps the value out of its log)',
  LITESTREAM_SECRET_ACCESS_KEY: 'the S3 secret key of a replica, the same way',
  RELEASE_SIGNING_KEY:
    'not the server\'s: `npm run release` signs `SHA256SUMS` with the SSH key this names (docs/OPERATIONS.md, "Check the release\'s signature")',
}

interface SettingSchema {
  type?: string
  description?: string
  default?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  anyOf?: SettingSchema[]
  const?: unknown
  [OptionalKind]?: string
}

export function settingSchemas(): [string, SettingSchema][] {
  return Object.entries(ConfigSchema.properties as Record<string, SettingSchema>)
}

/** A byte size as people say it, beside the number one types: 33554432 (32 MiB). */
function bytes(value: number): string {
  for (const [unit, size] of [
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const)
    if (value >= size && value % size === 0) return ` (${value / size} ${unit})`
  return ''
}

/** What a setting accepts, from its schema. */
function accepted(schema: SettingSchema): string {
  if (schema.anyOf) {
    return schema.anyOf
      .map((choice) => (choice.const !== undefined ? `\`${String(choice.const)}\`` : accepted(choice)))
      .join(', ')
  }
  if (schema.type === 'integer') {
    if (schema.minimum !== undefined && schema.maximum !== undefined)
      return `whole number, ${schema.minimum}–${schema.maximum}`
    if (schema.minimum !== undefined) return `whole number, ${schema.minimum} or more`
    return 'whole number'
  }
  if (schema.type === 'boolean') return '`true`, `false`'
  if (schema.type === 'string') return 'text'
  return schema.type ?? 'any'
}

function shownDefault(name: string, schema: SettingSchema): string {
  if (schema.default === undefined) return '(unset)'
  if (schema.default === '') return '(empty)'
  if (typeof schema.default === 'number')
    return `\`${schema.default}\`${name.endsWith('_BYTES') || name === 'BODY_LIMIT' ? bytes(schema.default) : ''}`
  return `\`${String(schema.default)}\``
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

function table(rows: [string, SettingSchema][]): string[] {
  return [
    '| setting | default | accepts | meaning |',
    '| ------- | ------- | ------- | ------- |',
    ...rows.map(
      ([name, schema]) =>
        `| \`${name}\` | ${cell(shownDefault(name, schema))} | ${cell(accepted(schema))} | ${cell(schema.description ?? '')} |`,
    ),
  ]
}

const HEADER = `# Settings

<!-- Written by \`npm run docs\` from the config schema (config.ts, lib/*-settings.ts): edit the
schema's descriptions, not this file. test/docs/settings-reference.test.ts fails when it is stale. -->

Every setting the server reads, each once. They are environment variables, read and checked at
start: a bad value stops the start with a message naming it, and nothing else in the environment
is read as a setting. Whole numbers are written in decimal (\`1e9\` or \`1.5\` are refused, not
misread); a variable set to the empty string counts as unset. Under systemd they are
\`Environment=\` lines of the unit (or \`sudo systemctl edit facility-service\`); a secret goes in an
\`EnvironmentFile=\` readable by root only. Scripts that build the service in-process pass the same
names as \`settings\` (docs/SCRIPTING.md). The command-line tool reads \`DATABASE_PATH\` and
\`DATABASE_BUSY_TIMEOUT_MS\` as well (docs/reference/CLI.md).
`

/** The whole of docs/reference/SETTINGS.md. */
export function settingsReference(): string {
  const lines = [HEADER]
  const byArea = new Map<Area, [string, SettingSchema][]>()
  for (const entry of settingSchemas()) {
    const area = AREAS.find((candidate) => candidate.holds(entry[0])) ?? OTHER
    byArea.set(area, [...(byArea.get(area) ?? []), entry])
  }
  for (const area of [...AREAS, OTHER]) {
    const rows = byArea.get(area)
    if (!rows) continue
    lines.push(`## ${area.title}`, '')
    if (area.about) lines.push(area.about, '')
    lines.push(...table(rows), '')
  }
  lines.push(
    '## Read from the environment, not settings',
    '',
    'The server and its tools read these too; none is checked at start.',
    '',
    '| variable | what reads it |',
    '| -------- | ------------- |',
    ...Object.entries(OUTSIDE_SCHEMA).map(([name, use]) => `| \`${name}\` | ${cell(use)} |`),
    '',
  )
  return lines.join('\n')
}
