import createError from '@fastify/error'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FormTemplateRepository } from '../../db/form-templates.js'
import type { Principal } from '../../db/tokens.js'
import { RENDER_ENGINES, type RenderEngine } from '../../plugins/render/sandbox.js'
import { errorResponses, IdParams, StringEnum } from '../../plugins/schemas.js'

export const DEFAULT_ENGINE: RenderEngine = 'pug'

const NoLayoutError = createError('RENDER_NO_TEMPLATE', 'form template %s has no print layout (template)', 422)
const BadEngineError = createError('RENDER_BAD_ENGINE', 'config.engine of form template %s must be one of: %s', 422)

const Engine = StringEnum(RENDER_ENGINES, {
  description: `template engine; default config.engine, else ${DEFAULT_ENGINE}`,
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
const responses = { 200: Html, ...errorResponses(404, 422) }

interface RenderOptions {
  templates: FormTemplateRepository
}

/**
 * Print rendering: the template's layout, run in the sandbox with every field of the record but
 * `template` as data, plus the caller's data as `data` (POST; an empty object on GET, so one
 * layout serves both). Rendering changes nothing, so a read token may print.
 */
const renderRoutes: FastifyPluginAsyncTypebox<RenderOptions> = async function renderRoutes(fastify, opts) {
  async function render(principal: Principal, id: string, engine: RenderEngine | undefined, data?: object) {
    const { record, version } = opts.templates.get(principal, id)
    const { template, ...fields } = record
    if (template === undefined) throw new NoLayoutError(id)
    const configured = (record.config as { engine?: unknown } | undefined)?.engine
    if (engine === undefined && configured !== undefined && !RENDER_ENGINES.includes(configured as RenderEngine)) {
      throw new BadEngineError(id, RENDER_ENGINES.join(', '))
    }
    const chosen = engine ?? (configured as RenderEngine | undefined) ?? DEFAULT_ENGINE
    return fastify.renderer.render({
      engine: chosen,
      source: template,
      cacheKey: `${id}:${version}:${chosen}`,
      data: { ...fields, data: data ?? {} },
    })
  }

  fastify.get(
    '/form-templates/:id/render',
    {
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
      const html = await render(request.principal, request.params.id, request.query.engine)
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html)
    },
  )

  fastify.post(
    '/form-templates/:id/render',
    {
      config: { role: 'read' },
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
      const html = await render(request.principal, request.params.id, engine, data)
      return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html)
    },
  )
}

export default renderRoutes
