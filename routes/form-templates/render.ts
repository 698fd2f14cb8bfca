import createError from '@fastify/error'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import type { FormTemplateRepository } from '../../db/repositories/form-templates.js'
import type { Principal } from '../../domain/principal.js'
import { refuseDeepNesting } from '../../lib/json-values.js'
import { type RenderEngine, RenderError } from '../../render/sandbox.js'
import { errorResponses, IdParams, StringEnum } from '../../schemas/common.js'
import { FORM_TEMPLATE_LIMITS } from '../../schemas/form-templates.js'

export const DEFAULT_ENGINE: RenderEngine = 'pug'

/** The engine names a caller may use: the interface names jade, pug's former name, as well. */
const ENGINE_BY_NAME: ReadonlyMap<string, RenderEngine> = new Map([
  ['pug', 'pug'],
  ['jade', 'pug'],
  ['ejs', 'ejs'],
])
const ENGINE_NAMES = [...ENGINE_BY_NAME.keys()]

const NoLayoutError = createError('RENDER_NO_TEMPLATE', 'form template %s has no print layout (template)', 422)
const BadEngineError = createError('RENDER_BAD_ENGINE', 'config.engine of form template %s must be one of: %s', 422)
const Engine = StringEnum(ENGINE_NAMES, {
  description: `template engine (jade is pug); default config.engine, else ${DEFAULT_ENGINE}`,
})
const RenderQuery = Type.Object({ engine: Type.Optional(Engine) }, { additionalProperties: false })
const RenderBody = Type.Object(
  {
    engine: Type.Optional(Engine),
    data: Type.Optional(
      Type.Object(
        {},
        { additionalProperties: true, description: 'caller data, e.g. answers; the layout sees it as `data`' },
      ),
    ),
  },
  { additionalProperties: false },
)
const Html = Type.String({ description: 'the rendered page, text/html' })
const responses = { 200: Html, ...errorResponses(404, 422, 503) }

/**
 * Aborted when the client hangs up before its answer went out: a print still waiting for a print
 * worker then leaves the queue instead of running for nobody (a client that timed out and retries
 * would otherwise queue each attempt).
 */
function hangUp(reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  // A client that hung up while the request's hooks ran (its 'close' has come already).
  if (reply.raw.destroyed && !reply.raw.writableFinished) controller.abort()
  else
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) controller.abort()
    })
  return controller.signal
}

interface RenderOptions {
  templates: FormTemplateRepository
}

/**
 * Print rendering: the template's layout, run in the sandbox with every field of the record but
 * `template` as data, plus the caller's data as `data` (POST; an empty object on GET, so one
 * layout serves both). Rendering changes nothing, so a read token may print.
 */
const renderRoutes: FastifyPluginAsyncTypebox<RenderOptions> = async function renderRoutes(fastify, opts) {
  async function render(
    reply: FastifyReply,
    principal: Principal,
    id: string,
    engine: string | undefined,
    data?: object,
  ) {
    const { record, version } = opts.templates.get(principal, id)
    const { template, ...fields } = record
    if (template === undefined) throw new NoLayoutError(id)
    const configured = (record.config as { engine?: unknown } | undefined)?.engine
    const configuredEngine = typeof configured === 'string' ? ENGINE_BY_NAME.get(configured) : undefined
    if (engine === undefined && configured !== undefined && configuredEngine === undefined) {
      throw new BadEngineError(id, ENGINE_NAMES.join(', '))
    }
    const chosen = (engine === undefined ? undefined : ENGINE_BY_NAME.get(engine)) ?? configuredEngine ?? DEFAULT_ENGINE
    const job = {
      engine: chosen,
      source: template,
      cacheKey: `${id}:${version}:${chosen}`,
      data: { ...fields, data: data ?? {} },
      // A facility's layouts take turns at the compiler with other facilities'.
      owner: record.facility ?? '',
    }
    try {
      return await fastify.renderer.render(job, hangUp(reply))
    } catch (error) {
      // Fastify logs no "request completed" for an answer it could not send: the print says it left.
      if (error instanceof RenderError && error.code === 'RENDER_CANCELLED')
        reply.log.info(
          { res: { statusCode: 499 } },
          'the client closed the connection while its print waited: not rendered',
        )
      throw error
    }
  }

  fastify.get(
    '/form-templates/:id/render',
    {
      config: { readAudit: 'render', securityHeaders: 'print' },
      schema: {
        tags: ['form templates'],
        summary: "render the template's print layout to HTML",
        params: IdParams,
        querystring: RenderQuery,
        produces: ['text/html'],
        response: responses,
      },
    },
    async function renderFormTemplate(request, reply) {
      const html = await render(reply, request.principal, request.params.id, request.query.engine)
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html)
    },
  )

  fastify.post(
    '/form-templates/:id/render',
    {
      // Rendering changes nothing: a retry renders again, and no page of patient data is kept for it.
      config: { role: 'read', readAudit: 'render', idempotency: 'accept', securityHeaders: 'print' },
      schema: {
        tags: ['form templates'],
        summary: 'render the print layout with caller data (available to the layout as `data`)',
        params: IdParams,
        body: RenderBody,
        produces: ['text/html'],
        response: { ...responses, ...errorResponses(404, 413, 415, 422) },
      },
    },
    async function renderFormTemplateWithData(request, reply) {
      const { engine, data } = request.body
      // The same limit as a template's `meta` and `config`.
      refuseDeepNesting('data', data, FORM_TEMPLATE_LIMITS.objectDepth)
      const html = await render(reply, request.principal, request.params.id, engine, data)
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html)
    },
  )
}

export default renderRoutes
