import type { Database } from 'better-sqlite3'
import fp from 'fastify-plugin'
import { type AuditLog, createAuditLog } from '../db/audit.js'
import { applyBedPolicy, type BedPolicy } from '../db/bed-policy.js'
import { openDatabase } from '../db/connection.js'
import { createTokenRepository, type TokenRepository } from '../db/tokens.js'
import { withTokenCache } from './token-cache.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Database
    tokens: TokenRepository
    audit: AuditLog
  }
}

export interface DbPluginOptions {
  path: string
  bedPolicy: BedPolicy
}

/** The one SQLite connection every plugin shares; closed when the app closes. */
export default fp<DbPluginOptions>(
  async function dbPlugin(fastify, opts) {
    const db = openDatabase(opts.path)
    // 32 MiB of page cache instead of SQLite's 2 MiB: the indexes a busy ward reads stay in memory
    // rather than being read again (a system call each) on every request.
    db.pragma('cache_size = -32768')
    try {
      applyBedPolicy(db, opts.bedPolicy)
    } catch (error) {
      db.close()
      throw error
    }
    fastify.decorate('db', db)
    fastify.decorate('tokens', withTokenCache(db, createTokenRepository(db)))
    fastify.decorate('audit', createAuditLog(db))
    fastify.addHook('onClose', function closeDatabase() {
      db.close()
    })
  },
  { name: 'db', fastify: '5.x' },
)
