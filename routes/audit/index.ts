import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { auditEntryFor } from '../../db/repositories/audit.js'
import { errorResponses, Timestamp } from '../../schemas/common.js'
import { auditPage } from './paging.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

const ChangeEntry = Type.Object({
  kind: Type.Literal('change'),
  seq: Type.Integer(),
  at: Timestamp,
  account: Type.String(),
  tokenId: Nullable(Type.String()),
  facility: Nullable(Type.String()),
  resource: Type.String(),
  recordId: Type.String(),
  operation: Type.String(),
  before: Nullable(Type.Object({}, { additionalProperties: true })),
  after: Nullable(Type.Object({}, { additionalProperties: true })),
})

const ReadEntry = Type.Object({
  kind: Type.Literal('read'),
  seq: Type.Integer(),
  at: Timestamp,
  account: Type.String(),
  tokenId: Type.String(),
  facility: Nullable(Type.String()),
  resource: Type.String(),
  operation: Type.Union([Type.Literal('get'), Type.Literal('list'), Type.Literal('render')]),
  route: Type.String({ description: 'method and route pattern, e.g. GET /ward-occupants/:id' }),
  status: Type.Integer({ description: 'the status the reader was answered' }),
  recordId: Nullable(Type.String()),
  filters: Nullable(Type.Array(Type.String(), { description: "a list's filter names, never their values" })),
  total: Nullable(Type.Integer({ description: 'how many records a list matched' })),
})

const AuditQuery = Type.Object(
  {
    kind: Type.Optional(
      Type.Union([Type.Literal('changes'), Type.Literal('reads')], {
        description: 'changes (default): the audit trail; reads: the read log (AUDIT_READS=true)',
      }),
    ),
    resource: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    recordId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    account: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    after: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: 'entries after this seq' })),
    $limit: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'at most 1000 (a larger limit is lowered), default 100' }),
    ),
    $skip: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'entries to pass over (after `after`), default 0' }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,4}$',
        deprecated: true,
        description: 'deprecated alias of $limit; refused (400) beside a $limit of another value',
      }),
    ),
  },
  { additionalProperties: false },
)

/**
 * The audit trail of changes and the log of reads, for administrators; a facility-bound admin sees
 * its own facility's entries only (for reads: the reads made by tokens of its facility; for a
 * record that moved: the side that was in its facility).
 */
const auditRoutes: FastifyPluginAsyncTypebox = async function auditRoutes(fastify) {
  const reads = fastify.repos.readLog

  fastify.get(
    '/audit',
    {
      config: { role: 'admin' },
      schema: {
        tags: ['administration'],
        summary: 'read the audit log of changes, or (kind=reads) of reads, oldest first (admin tokens only)',
        querystring: AuditQuery,
        response: {
          200: Type.Object({ entries: Type.Array(Type.Union([ChangeEntry, ReadEntry])) }),
          ...errorResponses(),
        },
      },
    },
    async function listAudit(request) {
      const q = request.query
      const filter = {
        resource: q.resource,
        recordId: q.recordId,
        account: q.account,
        facility: request.principal.facility ?? undefined,
        afterSeq: q.after === undefined ? undefined : Number(q.after),
        ...auditPage(q),
      }
      if (q.kind === 'reads') return { entries: reads.list(filter).map((e) => ({ kind: 'read' as const, ...e })) }
      // Of a record that moved, a facility-bound admin reads only its own facility's side.
      const changes = fastify.audit.list(filter).map((e) => auditEntryFor(request.principal.facility, e))
      return { entries: changes.map((e) => ({ kind: 'change' as const, ...e })) }
    },
  )
}

export default auditRoutes
