import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { FORM_TEMPLATE_FIELDS } from '../../db/repositories/form-template-content.js'
import { listParameters } from '../../http/list-parameters.js'
import { ifMatchOf, withEtag } from '../../http/reply.js'
import { facilityForCreate } from '../../plugins/auth/index.js'
import { errorResponses, IdParams, ListEnvelope, ListQueryString, listItem } from '../../schemas/common.js'
import { FormTemplate, FormTemplateCreate, FormTemplatePatch } from '../../schemas/form-templates.js'
import { answerRemoved, answerVersioned, pageOf } from '../answers.js'
import renderRoutes from './render.js'

const tags = ['form templates']

/** Reusable clinical forms: their questions (items), tags, free-form settings and print layout. */
const formTemplateRoutes: FastifyPluginAsyncTypebox = async function formTemplateRoutes(fastify) {
  const templates = fastify.repos.formTemplates

  fastify.post(
    '/form-templates',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'create a form template (items without an id get one)',
        body: FormTemplateCreate,
        response: { 200: FormTemplate, ...errorResponses(413, 415) },
      },
    },
    async function createFormTemplate(request, reply) {
      const facility = facilityForCreate(request.principal, request.body.facility)
      return answerVersioned(request, reply, () => templates.create(request.principal, facility, request.body))
    },
  )

  fastify.get(
    '/form-templates',
    {
      config: { readAudit: 'list', listParameters: listParameters(FORM_TEMPLATE_FIELDS, FormTemplate) },
      schema: {
        tags,
        summary: 'list form templates (Feathers-style filters, e.g. type=intake&tags=vitals&hiddenAt=null)',
        querystring: ListQueryString,
        response: { 200: ListEnvelope('formTemplates', listItem(FormTemplate)), ...errorResponses() },
      },
    },
    async function listFormTemplates(request) {
      return pageOf(request, 'formTemplates', templates.list(request.principal, request.query))
    },
  )

  fastify.get(
    '/form-templates/:id',
    {
      config: { readAudit: 'get' },
      schema: {
        tags,
        summary: 'get one form template (with its ETag)',
        params: IdParams,
        response: { 200: FormTemplate, ...errorResponses(404) },
      },
    },
    async function getFormTemplate(request, reply) {
      return withEtag(reply, templates.get(request.principal, request.params.id))
    },
  )

  fastify.patch(
    '/form-templates/:id',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'replace the fields named (null removes one); hide: true hides, hide: false shows again',
        params: IdParams,
        body: FormTemplatePatch,
        response: { 200: FormTemplate, ...errorResponses(404, 412, 413, 415) },
      },
    },
    async function patchFormTemplate(request, reply) {
      return answerVersioned(request, reply, () =>
        templates.patch(request.principal, request.params.id, request.body, ifMatchOf(request)),
      )
    },
  )

  fastify.delete(
    '/form-templates/:id',
    {
      config: { readAudit: 'write' },
      schema: {
        tags,
        summary: 'delete a form template and return it (If-Match honoured)',
        params: IdParams,
        response: { 200: FormTemplate, ...errorResponses(404, 412) },
      },
    },
    async function deleteFormTemplate(request, reply) {
      return answerRemoved(request, reply, () =>
        templates.remove(request.principal, request.params.id, ifMatchOf(request)),
      )
    },
  )

  await fastify.register(renderRoutes, { templates })
}

export default formTemplateRoutes
