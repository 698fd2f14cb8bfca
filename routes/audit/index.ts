import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses, Timestamp } from '../../plugins/schemas.js'

const AuditEntry = Type.Object({
  seq: Type.Integer(),
  at: Timestamp,
  account: Type.String(),
  tokenId: Type.Union([Type.String(), Type.Null()]),
  facility: Type.Union([Type.String(), Type.Null()]),
  resource: Type.String(),
  recordId: Type.String(),
  operation: Type.String(),
  before: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  after: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
})

const AuditQuery = Type.Object(
  {
    resource: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    recordId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    after: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: 'entries after this seq' })),
    limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,4}$', description: 'at most 1000, default 100' })),
  },
  { additionalProperties: false },
)

/** The audit trail, for administrators; a facility-bound admin sees its own facility's entries. */
const auditRoutes: FastifyPluginAsyncTypebox = async function auditRoutes(fastify) {
  fastify.get(
    '/audit',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['administration'],
        summary: 'read the audit log, oldest first (admin tokens only)',
        querystring: AuditQuery,
        response: { 200: Type.Object({ entries: Type.Array(AuditEntry) }), ...errorResponses() },
      },
    },
    async function listAudit(request) {
      const q = request.query
      const entries = fastify.audit.list({
        resource: q.resource,
        recordId: q.recordId,
        facility: request.principal.facility ?? undefined,
        afterSeq: q.after === undefined ? undefined : Number(q.after),
        limit: Math.min(Number(q.limit ?? 100), 1000),
      })
      return { entries }
    },
  )
}

export default auditRoutes
