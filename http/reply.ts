import type { FastifyReply, FastifyRequest } from 'fastify'
import { etagFor, type IfMatch, parseIfMatch } from '../domain/versions.js'

// Small HTTP helpers every resource route uses for optimistic concurrency.

export function ifMatchOf(request: FastifyRequest): IfMatch {
  const header = request.headers['if-match']
  return parseIfMatch(Array.isArray(header) ? header.join(',') : header)
}

export function withEtag<T>(reply: FastifyReply, versioned: { record: T; version: number }): T {
  reply.header('etag', etagFor(versioned.version))
  return versioned.record
}

/**
 * Sends JSON text that is already serialized (written by SQLite from the record's columns, see
 * db/list.ts), so Fastify does not serialize it a second time. Only for text that holds exactly
 * what the route's response schema allows.
 */
export function sendJson(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}
