import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendJson, withEtag } from '../http/reply.js'
import { answerWrite } from '../plugins/idempotency.js'
import { noteListTotal } from '../plugins/read-audit.js'

/**
 * The answer to a create, patch or mark: the record, with the ETag of the version the write made.
 * With an Idempotency-Key the answer is stored in the write's own transaction (plugins/idempotency.ts),
 * so `write` must be the repository call itself (its promise is the write queue's), and a record
 * that carries no version is given one by `versionOf`, inside that transaction too.
 */
export function answerVersioned<W, T>(
  request: FastifyRequest,
  reply: FastifyReply,
  write: () => Promise<W>,
  versionOf: (written: W) => { record: T; version: number } = (written) =>
    written as unknown as { record: T; version: number },
): Promise<T> {
  return answerWrite(request, reply, write, (written) => withEtag(reply, versionOf(written)))
}

/**
 * A page of records that SQLite wrote as JSON text with exactly the schema's fields, sent in the
 * list envelope (`{ "<plural>": [...], total, limit, skip }`); the total is noted for the read log.
 */
export function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  plural: string,
  page: { json: string; total: number; limit: number; skip: number },
): FastifyReply {
  noteListTotal(request, page.total)
  return sendJson(reply, `{"${plural}":${page.json},"total":${page.total},"limit":${page.limit},"skip":${page.skip}}`)
}

/** The answer to a delete: the record as it was (no ETag: that version is gone). */
export function answerRemoved<T>(request: FastifyRequest, reply: FastifyReply, remove: () => Promise<T>): Promise<T> {
  return answerWrite(request, reply, remove, (removed) => removed)
}

/** A page of records as objects, in the list envelope (serialized by the route's schema). */
export function pageOf<P extends string, T>(
  request: FastifyRequest,
  plural: P,
  page: { records: T[]; total: number; limit: number; skip: number },
): { [K in P]: T[] } & { total: number; limit: number; skip: number } {
  noteListTotal(request, page.total)
  return { [plural]: page.records, total: page.total, limit: page.limit, skip: page.skip } as {
    [K in P]: T[]
  } & { total: number; limit: number; skip: number }
}
