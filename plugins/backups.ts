import fp from 'fastify-plugin'
import { ConfigError } from '../config.js'
import { type BackupFile, checkBackupDirectory, newestBackup, pruneBackups, takeBackup } from '../db/backups.js'

declare module 'fastify' {
  interface FastifyInstance {
    backups: Backups
  }
}

export interface BackupOptions {
  /** Where scheduled backups go; null: no scheduled backups. */
  dir: string | null
  intervalMs: number
  keep: number
}

export interface BackupStatus {
  dir: string
  /** The newest good backup that exists now (read at each call), if any. */
  last: BackupFile | null
  /** Set while backups fail: since when, and why (the file system's or the check's words). */
  failing: { since: number; message: string } | null
}

export interface Backups {
  /** null when scheduled backups are off. */
  status(): BackupStatus | null
  /** Takes one now (the schedule's next one comes an interval later). */
  runNow(): Promise<void>
}

/**
 * Scheduled backups (docs/OPERATIONS.md, "Back up"): every BACKUP_INTERVAL_MINUTES a checked copy
 * in BACKUP_DIR, the newest BACKUP_KEEP kept. A failure (a full disk, a missing directory, a copy
 * that fails its check) is logged at error once per episode and shown on /health, which still
 * answers 200: the ward works, the monitor sees that its backups do not. A BACKUP_DIR that others
 * could read into or redirect (a link, another owner, open to others' writes) stops the start; found
 * later, it fails the backups until it is fixed.
 */
export default fp<BackupOptions>(
  async function backupsPlugin(fastify, opts) {
    const { dir } = opts
    if (dir === null) {
      fastify.decorate('backups', { status: () => null, runNow: async () => undefined })
      return
    }
    const directory: string = dir
    let failing: BackupStatus['failing'] = null
    let running: Promise<void> | null = null
    try {
      checkBackupDirectory(dir)
    } catch (error) {
      // A missing directory shows as a failure at the first backup (it may be mounted later).
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new ConfigError(`BACKUP_DIR: ${(error as Error).message}`)
    }

    async function backUp(): Promise<void> {
      try {
        const last = await takeBackup(fastify.db, directory)
        const removed = pruneBackups(directory, opts.keep, last.file)
        if (failing !== null) fastify.log.info({ file: last.file }, 'scheduled backups work again')
        failing = null
        fastify.log.info({ file: last.file, removed: removed.length }, 'scheduled backup taken')
      } catch (error) {
        const message = (error as Error).message
        if (failing === null) {
          fastify.log.error({ err: error, dir }, `scheduled backup into ${dir} failed: ${message}`)
          failing = { since: Date.now(), message }
        } else failing.message = message
      }
    }

    function runNow(): Promise<void> {
      running ??= backUp().finally(() => {
        running = null
      })
      return running
    }

    const { intervalMs } = opts
    const timer = setInterval(runNow, intervalMs)
    timer.unref()
    // A start after a long stop backs up at once rather than an interval later.
    const newest = newestBackup(dir)
    if (newest === null || Date.now() - newest.at >= intervalMs) void runNow()
    fastify.addHook('preClose', async function finishBackup() {
      clearInterval(timer)
      await running
    })

    fastify.decorate('backups', {
      // What exists when asked: a backup removed since is not reported as the last one.
      status: () => ({ dir, last: newestBackup(directory), failing }),
      runNow,
    })
  },
  { name: 'backups', fastify: '5.x', dependencies: ['db'] },
)
