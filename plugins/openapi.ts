import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TObject } from '@sinclair/typebox'
import type { RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { insideExecutable } from '../lib/executable.js'
import { productPath } from '../lib/product-files.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** For the OpenAPI document only: a list's filters, from its field map (plugins/list-parameters.ts). */
    listParameters?: TObject
  }
}

interface Operation {
  parameters?: {
    in: string
    schema?: { type?: string; deprecated?: boolean }
    style?: string
    explode?: boolean
    deprecated?: boolean
  }[]
}

/**
 * Per route: the operationId is the handler's name (generators name methods after it), and a list
 * shows the parameters generated from its field map instead of the permissive querystring schema
 * that validation uses (the query engine does the checking).
 */
function describeRoute({ schema, url, route }: { schema: object; url: string; route: RouteOptions }) {
  const listParameters = route.config?.listParameters
  return {
    url,
    schema: {
      ...schema,
      operationId: route.handler.name,
      ...(listParameters ? { querystring: listParameters } : {}),
    },
  }
}

/**
 * Query parameters as clients read them: object-valued ones ($sort, $or) are qs-encoded with
 * brackets, OpenAPI's deepObject; one whose schema is deprecated (/audit's `limit`) is marked so
 * itself, where generators and the page look.
 */
function describeQueryParameters(document: { paths?: Record<string, Record<string, Operation>> }) {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'query') continue
        if (parameter.schema?.type === 'object') {
          parameter.style = 'deepObject'
          parameter.explode = true
        }
        if (parameter.schema?.deprecated === true) parameter.deprecated = true
      }
    }
  }
  return document
}

/**
 * The page's static files: from @fastify/swagger-ui's own folder, or inside the single executable
 * from the copy it carries (the package finds its folder and logo by its own file path, which a
 * bundle does not have).
 */
function pageFiles() {
  if (!insideExecutable()) return {}
  const baseDir = productPath('swagger-ui')
  return { baseDir, logo: { type: 'image/svg+xml', content: readFileSync(join(baseDir, 'logo.svg')) } }
}

/**
 * The OpenAPI document, generated from the same TypeBox schemas that validate and serialize,
 * at /openapi.json, with the interactive page at /docs. Neither needs a token.
 */
export default fp(
  async function openapiPlugin(fastify, opts: { version: string }) {
    await fastify.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'facility-service',
          description: 'Ward occupants, form templates and notifications of a hospital ward.',
          version: opts.version,
          license: { name: 'UNLICENSED', url: 'https://docs.npmjs.com/cli/configuring-npm/package-json#license' },
        },
        // Relative: the document is right wherever the service is reached (behind a proxy too).
        servers: [{ url: '/', description: 'this service' }],
        components: {
          securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'an API token' } },
        },
        security: [{ bearerAuth: [] }],
      },
      transform: describeRoute,
      transformObject: (document) =>
        'openapiObject' in document
          ? describeQueryParameters(document.openapiObject as Parameters<typeof describeQueryParameters>[0])
          : {},
      refResolver: {
        buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
      },
    })
    // Swagger UI's own routes: its page gets the docs policy (inline styles; plugins/security-headers.ts).
    fastify.addHook('onRoute', function docsPolicy(route) {
      if (route.url === '/docs' || route.url.startsWith('/docs/'))
        route.config = { ...route.config, securityHeaders: 'docs' }
    })
    await fastify.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { deepLinking: true, validatorUrl: null },
      ...pageFiles(),
    })
    fastify.get('/openapi.json', { schema: { hide: true } }, function openapiDocument() {
      return fastify.swagger()
    })
  },
  { name: 'openapi', fastify: '5.x' },
)
