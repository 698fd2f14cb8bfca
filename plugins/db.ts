import type { Database } from 'better-sqlite3'
import fp from 'fastify-plugin'
import { type AuditLog, createAuditLog } from '../db/audit.js'
import { applyBedPolicy, type BedPolicy } from '../db/bed-policy.js'
import { openDatabase } from '../db/connection.js'
import { createTokenRepository, type TokenRepository } from '../db/tokens.js'

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
    try {
      applyBedPolicy(db, opts.bedPolicy)
    } catch (error) {
      db.close()
      throw error
    }
    fastify.decorate('db', db)
    fastify.decorate('tokens', createTokenRepository(db))
    fastify.decorate('audit', createAuditLog(db))
    fastify.addHook('onClose', function closeDatabase() {
      db.close()
    })
  },
  { name: 'db', fastify: '5.x' },
)
