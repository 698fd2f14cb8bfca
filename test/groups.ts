import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Test } from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'

/**
 * Test files that `npm test` runs several to a process, each group by its runner
 * `test/groups/<name>.test.ts`. A process per file costs about 1.1 s of CPU for tap's loaders and
 * tsx, and about 1.4 s more to load the app's modules before the first test builds an app
 * (docs/TESTING.md, "Where the time goes"): here that is paid once a group. The files stay as they are, and
 * `npx tap <file>` still runs any one alone; package.json's tap.exclude lists them so that tap does
 * not run them a second time (test/suites.test.ts checks both).
 *
 * A file joins a group only when it is safe to share a process: its tests set no process-wide state
 * they do not restore (environment, handlers, umask, globals), take no fixed port, and no test
 * observes the process as a whole. A group holds files of up to some 6 s each (on a loaded machine),
 * about 10 to 20 s in all, so that tap's two jobs stay balanced. Left alone: the longest files (the
 * process is a small part of their cost), those that time the machine (render/idle-app,
 * render/limits), test/lib/private-cache.test.ts (asserts that its file is the program tap started)
 * and test/suites.test.ts (reads this list). The files that start the server, the CLI or Litestream
 * as processes and wait on them are not `npm test`'s but `npm run test:processes`'s.
 */
export const GROUPS: Record<string, readonly string[]> = {
  base: [
    'test/architecture/layers.test.ts',
    'test/architecture/sqlite-addon.test.ts',
    'test/auth/claims.test.ts',
    'test/cli/commands/beds.test.ts',
    'test/cli/commands/notify.test.ts',
    'test/cli/commands/rollback.test.ts',
    'test/cli/commands/token.test.ts',
    'test/cli/database.test.ts',
    'test/cli/duration.test.ts',
    'test/clients/feathers.test.ts',
    'test/config.test.ts',
    'test/lib/address-coverage.test.ts',
    'test/lib/lru.test.ts',
    'test/lib/private-cache-ancestors.test.ts',
    'test/lib/private-files.test.ts',
    'test/oidc/memory.test.ts',
    'test/oidc/settings.test.ts',
    'test/openapi/list-parameters.test.ts',
    'test/runtime.test.ts',
    'test/shared-compilers.test.ts',
    'test/start-flags.test.ts',
  ],
  db: [
    'test/db/beds-plan.test.ts',
    'test/db/checkpointer.test.ts',
    'test/db/feed-prune.test.ts',
    'test/db/hl7-digest-migration.test.ts',
    'test/db/migration-moves.test.ts',
    'test/db/migrations.test.ts',
    'test/db/notification-inbox-migration.test.ts',
    'test/db/notification-inbox-plan.test.ts',
    'test/db/pre-migration-copy.test.ts',
    'test/db/query-empty.test.ts',
    'test/db/query-plans.test.ts',
    'test/db/query.test.ts',
    'test/db/read-memo.test.ts',
    'test/db/replication-log.test.ts',
    'test/db/statement-journals.test.ts',
    'test/db/token-cache.test.ts',
    'test/db/write-queue-durable.test.ts',
    'test/db/write-queue.test.ts',
  ],
  'feed-reliability': [
    'test/feed/events.test.ts',
    'test/feed/moves.test.ts',
    'test/feed/slow-reader.test.ts',
    'test/feed/tickets.test.ts',
    'test/feed/views.test.ts',
    'test/reliability/busy.test.ts',
    'test/reliability/disk-full.test.ts',
    'test/reliability/idempotency-cut.test.ts',
    'test/reliability/storage-errors.test.ts',
  ],
  hl7: [
    'test/hl7/adt-domain.test.ts',
    'test/hl7/adt-patient-domain.test.ts',
    'test/hl7/cli.test.ts',
    'test/hl7/client.test.ts',
    'test/hl7/content-digest.test.ts',
    'test/hl7/delivery.test.ts',
    'test/hl7/events.test.ts',
    'test/hl7/limits.test.ts',
    'test/hl7/message-log-privacy.test.ts',
    'test/hl7/msa-segment.test.ts',
    'test/hl7/parking.test.ts',
    'test/hl7/retention.test.ts',
    'test/hl7/sender-address.test.ts',
    'test/hl7/storage-faults.test.ts',
    'test/hl7/ward-model.test.ts',
  ],
  plugins: [
    'test/plugins/auth/auth.test.ts',
    'test/plugins/backup-counting.test.ts',
    'test/plugins/backup-schedule.test.ts',
    'test/plugins/backups.test.ts',
    'test/plugins/checkpoints.test.ts',
    'test/plugins/client-errors.test.ts',
    'test/plugins/database-cache.test.ts',
    'test/plugins/durable-answers.test.ts',
    'test/plugins/error-names.test.ts',
    'test/plugins/errors.test.ts',
    'test/plugins/json-body.test.ts',
    'test/plugins/lingering-close.test.ts',
  ],
  'render-security': [
    'test/render/engine-start.test.ts',
    'test/render/fair-queue.test.ts',
    'test/render/idle-workers.test.ts',
    'test/render/plugin.test.ts',
    'test/render/quickjs.test.ts',
    'test/render/sandbox-carry-over.test.ts',
    'test/render/sandbox-memory-limit.test.ts',
    'test/render/sandbox-memory.test.ts',
    'test/security/headers.test.ts',
    'test/security/health-privacy.test.ts',
    'test/security/log-privacy.test.ts',
    'test/security/mutation-guards.test.ts',
    'test/security/secrets-and-headers.test.ts',
  ],
  'routes-forms': [
    'test/routes/audit-moves.test.ts',
    'test/routes/audit-reads-every-route.test.ts',
    'test/routes/beds.test.ts',
    'test/routes/board-privacy.test.ts',
    'test/routes/board.test.ts',
    'test/routes/form-templates-facility.test.ts',
    'test/routes/form-templates-list.test.ts',
    'test/routes/form-templates-patch.test.ts',
    'test/routes/form-templates-validation.test.ts',
    'test/routes/form-templates.test.ts',
  ],
  'routes-notifications': [
    'test/oidc/block.test.ts',
    'test/routes/idempotency-request.test.ts',
    'test/routes/notifications-privacy.test.ts',
    'test/routes/notifications-producer.test.ts',
    'test/routes/notifications-seen.test.ts',
    'test/routes/notifications.test.ts',
    'test/routes/ward-occupants-concurrency.test.ts',
  ],
  cli: [
    'test/cli/commands/restore-beside-server.test.ts',
    'test/cli/commands/restore.test.ts',
    'test/cli/commands/serve.test.ts',
    'test/cli/commands/smoke.test.ts',
  ],
  feed: [
    'test/feed/hub-order.test.ts',
    'test/feed/limits.test.ts',
    'test/feed/resume.test.ts',
    'test/feed/tickets-abuse.test.ts',
  ],
  'fuzz-inbox': [
    'test/db/notification-inbox.test.ts',
    'test/fuzz/form-templates.test.ts',
    'test/fuzz/regressions.test.ts',
  ],
  'hl7-listeners': [
    'test/hl7/connection-cap.test.ts',
    'test/hl7/connection-limits.test.ts',
    'test/hl7/control-id-reuse.test.ts',
    'test/hl7/retry-facility.test.ts',
  ],
  oidc: [
    'test/oidc/accounts-migration.test.ts',
    'test/oidc/discovery.test.ts',
    'test/oidc/isolation.test.ts',
    'test/oidc/keys.test.ts',
    'test/oidc/parked-notice.test.ts',
    'test/oidc/tokens.test.ts',
  ],
  'render-throttle': [
    'test/plugins/auth/throttle.test.ts',
    'test/render/compiler.test.ts',
    'test/render/escape.test.ts',
  ],
  'routes-caches': [
    'test/routes/notifications-page-cache.test.ts',
    'test/routes/notifications-plan.test.ts',
    'test/routes/ward-occupants-page-cache.test.ts',
  ],
  'routes-lists': [
    'test/routes/audit-reads.test.ts',
    'test/routes/idempotency.test.ts',
    'test/routes/notifications-paging.test.ts',
    'test/routes/ward-occupants-json.test.ts',
    'test/routes/ward-occupants.test.ts',
  ],
  'security-isolation': [
    'test/security/isolation-beds.test.ts',
    'test/security/isolation-feed.test.ts',
    'test/security/isolation-writes.test.ts',
    'test/security/setting-secrets.test.ts',
    'test/security/ticket-spellings.test.ts',
  ],
}

/** The runner of a group, as tap names it. */
export const runnerOf = (group: string) => `test/groups/${group}.test.ts`

/**
 * Runs a group's files in the calling process, in order: each file's top-level tests join tap's
 * root test as they would in a process of its own, so every assertion runs as before. A group gets
 * three times the timeout tap gives a process (package.json's tap.timeout, in TAP_TIMEOUT), not
 * once per file: the longest group took 40 s under coverage on a loaded machine, and a timeout per
 * file would let one hung test hold CI for up to 38 minutes (19 files of 120 s).
 */
export async function runGroup(t: Test, group: string): Promise<void> {
  const files = GROUPS[group]
  if (!files) throw new Error(`no test group ${group}`)
  const perFile = Number(process.env.TAP_TIMEOUT ?? 30) * 1000
  if (perFile > 0) t.setTimeout(perFile * Math.min(files.length, 3))
  for (const file of files) {
    await import(pathToFileURL(join(PROJECT_ROOT, file)).href)
  }
}
