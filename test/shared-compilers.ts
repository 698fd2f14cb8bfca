import { createRequire } from 'node:module'
import type { FastifyServerOptions } from 'fastify'

/**
 * Compiled validators and serializers shared by the apps one test process builds (tests only:
 * production builds one app a process and compiles as Fastify does by default).
 *
 * Building an app compiles every route's schemas with ajv and fast-json-stringify, more than half
 * the CPU of a build once the modules are loaded (docs/TESTING.md, "Where the time goes"), and the suite builds
 * hundreds of apps from the same schemas. Here a compiled function is kept under a key made of
 * everything its compilation reads: the schema's content, the part it checks (body, querystring,
 * params; the response status and content type), the shared schemas added with `addSchema`, and
 * the ajv or serializer options. Functions and other non-JSON values in the options (ajv plugins,
 * `onCreate`, a URI resolver, a format's RegExp) are keyed by identity, so an app given its own is
 * never served another's. A schema that depends on the config (a limit read from it) has another
 * content, so another key. A miss compiles with Fastify's own compilers (the versions it requires),
 * in a compiler of that app's own, exactly as the app would have without the cache.
 *
 * One thing Fastify does only with its default compilers: it lowercases the property names of a
 * plain-object headers schema before compiling it, and any compilers factory counts as custom. That
 * is done here with Fastify's own code (its compileSchemasForValidation, as for a default compiler).
 */

const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'))

interface ValidatorRoute {
  schema: unknown
  method?: string
  url?: string
  httpPart?: string
}
interface SerializerRoute {
  schema: unknown
  method?: string
  url?: string
  httpStatus?: string
  contentType?: string
}
type Validator = (route: ValidatorRoute) => unknown
type Serializer = (route: SerializerRoute) => unknown
type ValidatorBuilder = (externalSchemas: unknown, options: unknown) => Validator
type SerializerBuilder = (externalSchemas: Record<string, unknown> | undefined, options: unknown) => Serializer

const { compileSchemasForValidation } = fastifyRequire('./lib/validation.js') as {
  compileSchemasForValidation: (context: object, compile: Validator, isCustom: boolean) => void
}
const ValidatorSelector = fastifyRequire('@fastify/ajv-compiler') as () => ValidatorBuilder
const { SerializerSelector } = fastifyRequire('@fastify/fast-json-stringify-compiler') as {
  SerializerSelector: () => SerializerBuilder
}

/** Compilations by kind: what a test reads to see that the cache is used. */
export const compilations = { validators: 0, serializers: 0, validatorHits: 0, serializerHits: 0 }

const validators = new Map<string, unknown>()
const serializers = new Map<string, unknown>()

const identities = new WeakMap<object, number>()
let nextIdentity = 0
function identity(value: object): number {
  let id = identities.get(value)
  if (id === undefined) {
    id = nextIdentity++
    identities.set(value, id)
  }
  return id
}

/** JSON, except that what JSON cannot tell apart (functions, RegExps, class instances) is named by identity. */
function keyOf(value: unknown): string {
  return JSON.stringify(value ?? null, (_name, v: unknown) => {
    if (typeof v === 'function') return `[function #${identity(v)}]`
    if (typeof v === 'bigint' || typeof v === 'symbol') return `[${typeof v} ${String(v)}]`
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const proto = Object.getPrototypeOf(v)
      if (proto !== Object.prototype && proto !== null) return `[object #${identity(v)}]`
    }
    if (v === undefined) return '[undefined]'
    return v
  })
}

function isPlainObject(value: unknown): boolean {
  return value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype
}

/** The headers schema Fastify's default compiler is given: property names lowercased, by Fastify. */
function lowerCaseHeaders(route: ValidatorRoute): ValidatorRoute {
  if (!isPlainObject(route.schema)) return route
  let lowered: ValidatorRoute | undefined
  const context = { schema: { headers: route.schema }, config: { method: route.method, url: route.url } }
  compileSchemasForValidation(context, (r) => (lowered = r), false)
  if (lowered === undefined) throw new Error('Fastify compiled no headers schema')
  return lowered
}

function buildValidator(externalSchemas: unknown, options: unknown): Validator {
  const context = `${keyOf(externalSchemas)}\n${keyOf(options)}`
  let own: Validator | undefined
  return (given) => {
    const route = given.httpPart === 'headers' ? lowerCaseHeaders(given) : given
    const key = `${context}\n${route.httpPart}\n${keyOf(route.schema)}`
    const cached = validators.get(key)
    if (cached !== undefined) {
      compilations.validatorHits++
      return cached
    }
    own ??= ValidatorSelector()(externalSchemas, options)
    const compiled = own(route)
    compilations.validators++
    validators.set(key, compiled)
    return compiled
  }
}

function buildSerializer(externalSchemas: Record<string, unknown> | undefined, options: unknown): Serializer {
  const optionsKey = keyOf(options)
  // Fastify's serializer compiler drops a shared schema from the ones it resolves against once a
  // response schema with the same $id has been compiled: the same is done here, hit or miss.
  let externals = externalSchemas
  let externalsKey = keyOf(externals)
  return (route) => {
    const key = `${externalsKey}\n${optionsKey}\n${route.httpStatus}\n${route.contentType}\n${keyOf(route.schema)}`
    let compiled = serializers.get(key)
    if (compiled !== undefined) {
      compilations.serializerHits++
    } else {
      compiled = SerializerSelector()(externals, options)(route)
      compilations.serializers++
      serializers.set(key, compiled)
    }
    const id = (route.schema as { $id?: string } | null)?.$id
    if (externals && id && externals[id]) {
      externals = { ...externals }
      delete externals[id]
      externalsKey = keyOf(externals)
    }
    return compiled
  }
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>

/** The Fastify option that makes an app use the shared compilers: give it to buildApp's extra options. */
export const sharedCompilers: Pick<FastifyServerOptions, 'schemaController'> = {
  // Fastify's types give a compiler the schema alone; it is called with the route ({ schema, httpPart ... }).
  schemaController: { compilersFactory: { buildValidator, buildSerializer } as unknown as CompilersFactory },
}
