import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import qs from 'qs'
import { InvalidQueryError } from '../db/query/query.js'

/** Where the parser leaves the reason a query string was refused (Fastify's parser may not throw). */
const REFUSED = Symbol('query string refused')

type ParsedQuery = Record<string, unknown> & { [REFUSED]?: string }

/** A key as qs reads it: `+` is a space, and text that is not valid percent-encoding stays as it is. */
function decodeKey(raw: string): string {
  const spaced = raw.replace(/\+/g, ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/**
 * `__proto__` is the one key qs drops silently even with plainObjects: refuse it instead. Only the
 * keys are looked at (a value may well say `__proto__`), each decoded the way qs decodes it; the
 * key ends at the first `=`, or at `]=` when brackets come first, as in qs.
 */
function namesProto(text: string): boolean {
  if (!text.includes('%') && !text.includes('__proto__')) return false
  return text.split('&').some((part) => {
    const bracketEquals = part.indexOf(']=')
    const end = bracketEquals === -1 ? part.indexOf('=') : bracketEquals + 1
    return decodeKey(end === -1 ? part : part.slice(0, end)).includes('__proto__')
  })
}

/**
 * Fastify's query-string parser: qs, as the Feathers clients encode queries (brackets for
 * nesting, `[]` or `[0]` for arrays). A filter is never silently dropped: too many parameters,
 * too long lists and too deep nesting are refused, and keys named like Object.prototype members
 * (`constructor`, `toString`) become ordinary keys on prototype-less objects, so the list engine
 * reports them as unknown fields.
 */
export function parseQueryString(text: string): ParsedQuery {
  if (namesProto(text)) return { [REFUSED]: "the query string names '__proto__'" }
  try {
    return qs.parse(text, {
      depth: 5,
      strictDepth: true,
      arrayLimit: 1000,
      parameterLimit: 1000,
      throwOnLimitExceeded: true,
      plainObjects: true,
      allowPrototypes: true,
      allowDots: false,
      comma: false,
      duplicates: 'combine',
    })
  } catch (error) {
    return { [REFUSED]: `the query string is refused: ${(error as Error).message}` }
  }
}

/** Answers 400 for a query string the parser refused, once the caller is authenticated. */
export default fp(
  async function queryStringCheck(fastify) {
    fastify.addHook('preValidation', function refuseBadQuery(request: FastifyRequest, _reply, done) {
      const reason = (request.query as ParsedQuery | undefined)?.[REFUSED]
      done(reason === undefined ? undefined : new InvalidQueryError(reason))
    })
  },
  { name: 'query-string', fastify: '5.x' },
)
