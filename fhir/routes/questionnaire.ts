import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TemplateForFhir } from '../../db/repositories/questionnaires.js'
import { ifMatchOf } from '../../http/reply.js'
import type { FormTemplateCreate, FormTemplatePatch } from '../../schemas/form-templates.js'
import { compareKeys, decodeCursor, type Entry, type Keyset, pageAfter, searchFingerprint } from '../bundle.js'
import { FhirError } from '../outcome.js'
import {
  fromQuestionnaire,
  type ImportedTemplate,
  type ImportIssue,
  type Questionnaire,
  toQuestionnaire,
} from '../questionnaire.js'
import { searchOf, sendResource, sendSearch } from '../reply.js'
import { requireScope } from '../scope-hook.js'
import {
  orLists,
  pageSize,
  parseDate,
  periodMatches,
  type SearchDeclaration,
  type SearchQuery,
  single,
  sortOf,
  stringMatches,
  summaryCount,
} from '../search.js'

export const QUESTIONNAIRE_SEARCH: SearchDeclaration = {
  params: [
    { name: '_id', type: 'token', documentation: 'the Questionnaire id (the form template id)' },
    { name: '_lastUpdated', type: 'date', documentation: 'when the form template last changed' },
    {
      name: 'name',
      type: 'string',
      modifiers: ['exact', 'contains'],
      documentation: 'the computable name (from the title)',
    },
    { name: 'title', type: 'string', modifiers: ['exact', 'contains'], documentation: "the form template's name" },
    { name: 'status', type: 'token', documentation: 'active (shown) or retired (hidden)' },
    { name: 'url', type: 'uri', documentation: 'the canonical URL: FHIR_CANONICAL_BASE/Questionnaire/<id>' },
    { name: 'version', type: 'token', documentation: 'the version (meta.versionId)' },
  ],
  sort: ['_id', 'date'],
}

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
  const outcome = {
    resourceType: 'OperationOutcome',
    issue: issues.map(({ expression, diagnostics }) => ({
      severity: 'error',
      code: 'not-supported',
      diagnostics,
      expression: [expression],
    })),
  }
  return reply.code(422).type(JSON_TYPE).send(JSON.stringify(outcome))
}

/** `meta.fhir` holds the Questionnaire's descriptive elements; the rest of `meta` is the apps'. */
function metaWith(current: Record<string, unknown> | undefined, template: ImportedTemplate) {
  const { fhir: _previous, ...rest } = current ?? {}
  const meta = template.fhirMeta === undefined ? rest : { ...rest, fhir: template.fhirMeta }
  return Object.keys(meta).length === 0 ? undefined : meta
}

function createBody(template: ImportedTemplate): FormTemplateCreate {
  const body: FormTemplateCreate = { type: template.type }
  for (const field of ['subtype', 'name', 'description', 'createdAt'] as const) {
    if (template[field] !== undefined) Object.assign(body, { [field]: template[field] })
  }
  if (template.items.length > 0) body.items = template.items
  const meta = metaWith(undefined, template)
  if (meta !== undefined) body.meta = meta
  return body
}

/** A PUT replaces what a Questionnaire says; the print layout, tags, config and other meta stay. */
function replacement(current: TemplateForFhir, template: ImportedTemplate): FormTemplatePatch {
  const patch: FormTemplatePatch = {
    type: template.type,
    subtype: template.subtype ?? null,
    name: template.name ?? null,
    description: template.description ?? null,
    items: template.items.length > 0 ? template.items : null,
    meta: metaWith(current.record.meta, template) ?? null,
    hide: template.retired,
  }
  if (template.createdAt !== undefined) patch.createdAt = template.createdAt
  return patch
}

/** If-Match as the repository checks it: FHIR clients send the weak ETag (W/"3") of meta.versionId. */
function ifMatch(request: FastifyRequest) {
  const tags = ifMatchOf(request)
  return tags === null ? null : tags.map((tag) => tag.replace(/^W\//, ''))
}

function sendWritten(request: FastifyRequest, reply: FastifyReply, id: string, status: number) {
  const resource = asQuestionnaire(request, visible(request, id))
  const base = request.server.config.FHIR_BASE_URL.replace(/\/+$/, '') || `${request.protocol}://${request.host}/fhir`
  reply
    .code(status)
    .header('etag', `W/"${resource.meta.versionId}"`)
    .header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
    .header('location', `${base}/Questionnaire/${id}/_history/${resource.meta.versionId}`)
  return reply.type(JSON_TYPE).send(JSON.stringify(resource))
}

function matches(resource: Questionnaire, query: SearchQuery): boolean {
  const strings = (name: 'name' | 'title') =>
    Object.entries(query)
      .filter(([key]) => key.split(':')[0] === name)
      .every(([key, values]) =>
        values.every((value) =>
          value
            .split(',')
            .some((one) => stringMatches(one, key.split(':')[1], (resource[name] as string | undefined) ?? '')),
        ),
      )
  const tokens = (name: string, actual: string) => orLists(query, name).every((values) => values.includes(actual))
  const updated = Date.parse(resource.meta.lastUpdated)
  return (
    tokens('_id', resource.id) &&
    tokens('status', resource.status) &&
    tokens('url', resource.url) &&
    tokens('version', resource.version) &&
    strings('name') &&
    strings('title') &&
    (query._lastUpdated ?? []).every((value) => periodMatches(parseDate('_lastUpdated', value), updated, updated + 1))
  )
}

/** Sort keys that end in the id, so pages never repeat or skip; descending ids are complemented hex. */
function keyOf(sort: { key: string; descending: boolean } | undefined) {
  const id = (resource: Questionnaire, descending: boolean) =>
    descending
      ? resource.id.replace(/[0-9a-f]/g, (digit) => (15 - Number.parseInt(digit, 16)).toString(16))
      : resource.id
  if (sort?.key === 'date') {
    return (resource: Questionnaire): Keyset => {
      const date = Date.parse(resource.date)
      return [sort.descending ? -date : date, resource.id]
    }
  }
  return (resource: Questionnaire): Keyset => [id(resource, sort?.descending === true)]
}

/** Form templates as FHIR Questionnaires: read, search, create and update (docs/FHIR.md, "Questionnaire"). */
export default async function questionnaireRoutes(fastify: FastifyInstance) {
  const config = fastify.config

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
      const sort = sortOf(query, QUESTIONNAIRE_SEARCH.sort ?? [])
      const fingerprint = searchFingerprint('Questionnaire', query)
      const cursor = single(query, '_cursor')
      const after = cursor === undefined ? null : decodeCursor(cursor, fingerprint)
      const key = keyOf(sort)
      const found = request.server.repos.questionnaires
        .list(request.principal)
        .map((template) => asQuestionnaire(request, template))
        .filter((resource) => matches(resource, query))
        .map((resource) => ({ resource, key: key(resource) }))
        .sort((a, b) => compareKeys(a.key, b.key))
      const answer = { resourceType: 'Questionnaire', query, fingerprint }
      if (summaryCount(query)) return sendSearch(request, reply, { ...answer, total: found.length, entries: [] })
      const page = pageAfter(found, (item) => item.key, after, count)
      const entries: Entry[] = page.matches.map(({ resource }) => ({ resource, mode: 'match' }))
      return sendSearch(request, reply, { ...answer, total: page.total, entries, next: page.next })
    },
  )

  fastify.post(
    '/Questionnaire',
    { config: { readAudit: 'write' }, schema: { hide: true }, preHandler: requireScope('Questionnaire', 'create') },
    async function createQuestionnaire(request, reply) {
      const result = fromQuestionnaire(request.body)
      if (!result.ok) return sendRefusal(request, reply, result.issues)
      const template = result.template
      if (template.retired) {
        throw new FhirError(
          422,
          'business-rule',
          'a new form template is active: create it active, then retire it with a PUT',
          ['Questionnaire.status'],
        )
      }
      const facility = request.principal.facility
      const { record } = await request.server.repos.formTemplates.create(
        request.principal,
        facility,
        createBody(template),
      )
      return sendWritten(request, reply, record.id, 201)
    },
  )

  fastify.put<{ Params: { id: string } }>(
    '/Questionnaire/:id',
    { config: { readAudit: 'write' }, schema: { hide: true }, preHandler: requireScope('Questionnaire', 'update') },
    async function updateQuestionnaire(request, reply) {
      const { id } = request.params
      const bodyId = (request.body as { id?: unknown } | undefined)?.id
      if (bodyId !== id) {
        throw new FhirError(400, 'invalid', `the Questionnaire's id must be the id in the URL (${id})`, [
          'Questionnaire.id',
        ])
      }
      const current = visible(request, id)
      const result = fromQuestionnaire(request.body)
      if (!result.ok) return sendRefusal(request, reply, result.issues)
      const template = result.template
      await request.server.repos.formTemplates.patch(
        request.principal,
        id,
        replacement(current, template),
        ifMatch(request),
      )
      return sendWritten(request, reply, id, 200)
    },
  )
}
