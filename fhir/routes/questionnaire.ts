import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TemplateForFhir } from '../../db/repositories/questionnaires.js'
import { ifMatchOf } from '../../http/reply.js'
import { answerWrite } from '../../plugins/idempotency.js'
import { compareKeys, decodeCursor, type Entry, pageAfter, searchFingerprint } from '../bundle.js'
import { etagOf } from '../meta.js'
import { FhirError } from '../outcome.js'
import { fromQuestionnaire, type ImportIssue, type Questionnaire, toQuestionnaire } from '../questionnaire.js'
import { QUESTIONNAIRE_SEARCH, questionnaireKey, questionnaireMatches } from '../questionnaire-search.js'
import { createBody, replacement } from '../questionnaire-writes.js'
import { baseUrl, searchOf, sendResource, sendSearch } from '../reply.js'
import { requireScope } from '../scope-hook.js'
import { pageSize, single, sortOf, summaryCount } from '../search.js'

const JSON_TYPE = 'application/fhir+json; charset=utf-8'

function asQuestionnaire(request: FastifyRequest, template: TemplateForFhir): Questionnaire {
  return toQuestionnaire(template, { canonicalBase: request.server.config.FHIR_CANONICAL_BASE })
}

function visible(request: FastifyRequest, id: string): TemplateForFhir {
  const found = request.server.repos.questionnaires.get(request.principal, id)
  if (found === undefined) throw new FhirError(404, 'not-found', `Questionnaire/${id} is not known`)
  return found
}

/**
 * The 422 of a Questionnaire with parts a form template cannot hold: one issue per part, each
 * naming its path, so a client sees everything to change at once.
 */
function sendRefusal(request: FastifyRequest, reply: FastifyReply, issues: readonly ImportIssue[]) {
  request.log.info('Questionnaire refused: %d parts a form template cannot hold', issues.length)
  const issue = issues.map(({ expression, diagnostics }) => ({
    severity: 'error',
    code: 'not-supported',
    diagnostics,
    expression: [expression],
  }))
  return reply
    .code(422)
    .type(JSON_TYPE)
    .send(JSON.stringify({ resourceType: 'OperationOutcome', issue }))
}

/** A body that is no Questionnaire at all is a 400 (http.html#create); one with parts a template cannot hold, a 422. */
function importOf(body: unknown) {
  const resourceType = (body as { resourceType?: unknown } | null)?.resourceType
  if (typeof body !== 'object' || body === null || Array.isArray(body) || resourceType !== 'Questionnaire') {
    throw new FhirError(400, 'invalid', `the body must be a Questionnaire, not ${String(resourceType ?? typeof body)}`)
  }
  return fromQuestionnaire(body)
}

/** If-Match as the repository checks it: FHIR clients send the weak ETag (W/"3") of meta.versionId. */
function ifMatch(request: FastifyRequest) {
  const tags = ifMatchOf(request)
  return tags === null ? null : tags.map((tag) => tag.replace(/^W\//, ''))
}

/**
 * The Questionnaire a write made, read in the write's own transaction (answerWrite: so a write that
 * changed nothing is logged as a read, and an Idempotency-Key retry gets this answer again).
 */
function written(request: FastifyRequest, reply: FastifyReply, id: string): Questionnaire {
  const resource = asQuestionnaire(request, visible(request, id))
  reply
    .header('etag', etagOf(resource))
    .header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
    .header('location', `${baseUrl(request)}/Questionnaire/${id}/_history/${resource.meta.versionId}`)
  return resource
}

/** Form templates as FHIR Questionnaires: read, search, create and update (docs/FHIR.md, "Questionnaire"). */
export default async function questionnaireRoutes(fastify: FastifyInstance) {
  const config = fastify.config
  const templates = fastify.repos.formTemplates

  fastify.get<{ Params: { id: string } }>(
    '/Questionnaire/:id',
    { config: { readAudit: 'get' }, schema: { hide: true }, preHandler: requireScope('Questionnaire', 'read') },
    async function readQuestionnaire(request, reply) {
      return sendResource(request, reply, asQuestionnaire(request, visible(request, request.params.id)))
    },
  )

  fastify.get(
    '/Questionnaire',
    {
      config: { readAudit: 'list', fhirSearch: QUESTIONNAIRE_SEARCH },
      schema: { hide: true },
      preHandler: requireScope('Questionnaire', 'search'),
    },
    async function searchQuestionnaires(request, reply) {
      const query = searchOf(request, QUESTIONNAIRE_SEARCH)
      const count = pageSize(query, config.FHIR_PAGE_SIZE, config.FHIR_MAX_PAGE_SIZE)
      const key = questionnaireKey(sortOf(query, QUESTIONNAIRE_SEARCH.sort ?? []))
      const fingerprint = searchFingerprint('Questionnaire', query)
      const cursor = single(query, '_cursor')
      const after = cursor === undefined ? null : decodeCursor(cursor, fingerprint)
      const found = fastify.repos.questionnaires
        .list(request.principal)
        .map((template) => asQuestionnaire(request, template))
        .filter((resource) => questionnaireMatches(resource, query))
        .map((resource) => ({ resource, key: key(resource) }))
        .sort((a, b) => compareKeys(a.key, b.key))
      const answer = { resourceType: 'Questionnaire', query, fingerprint }
      if (summaryCount(query)) return sendSearch(request, reply, { ...answer, total: found.length, entries: [] })
      const page = pageAfter(found, (match) => match.key, after, count)
      const entries: Entry[] = page.matches.map(({ resource }) => ({ resource, mode: 'match' }))
      return sendSearch(request, reply, { ...answer, total: page.total, entries, next: page.next })
    },
  )

  fastify.post(
    '/Questionnaire',
    { config: { readAudit: 'write' }, schema: { hide: true }, preHandler: requireScope('Questionnaire', 'create') },
    async function createQuestionnaire(request, reply) {
      const result = importOf(request.body)
      if (!result.ok) return sendRefusal(request, reply, result.issues)
      if (result.template.retired) {
        throw new FhirError(
          422,
          'business-rule',
          'a new form template is active: create it active, then retire it with a PUT',
          ['Questionnaire.status'],
        )
      }
      const body = createBody(result.template)
      // Set before the write: answerWrite keeps the status with the answer for an Idempotency-Key retry.
      reply.code(201)
      const resource = await answerWrite(
        request,
        reply,
        () => templates.create(request.principal, request.principal.facility, body),
        ({ record }) => written(request, reply, record.id),
      )
      return reply.type(JSON_TYPE).send(JSON.stringify(resource))
    },
  )

  fastify.put<{ Params: { id: string } }>(
    '/Questionnaire/:id',
    { config: { readAudit: 'write' }, schema: { hide: true }, preHandler: requireScope('Questionnaire', 'update') },
    async function updateQuestionnaire(request, reply) {
      const { id } = request.params
      if ((request.body as { id?: unknown } | undefined)?.id !== id) {
        throw new FhirError(400, 'invalid', `the Questionnaire's id must be the id in the URL (${id})`, [
          'Questionnaire.id',
        ])
      }
      const current = visible(request, id)
      const result = importOf(request.body)
      if (!result.ok) return sendRefusal(request, reply, result.issues)
      const patch = replacement(current.record, result.template)
      const resource = await answerWrite(
        request,
        reply,
        () => templates.patch(request.principal, id, patch, ifMatch(request)),
        () => written(request, reply, id),
      )
      return reply.type(JSON_TYPE).send(JSON.stringify(resource))
    },
  )
}
