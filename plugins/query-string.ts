import qs from 'qs'

/**
 * Fastify's query-string parser: qs, as the Feathers clients encode queries (brackets for
 * nesting, `[]` or `[0]` for arrays). Depth and sizes are bounded; prototype keys are dropped.
 */
export function parseQueryString(text: string): Record<string, unknown> {
  return qs.parse(text, {
    depth: 5,
    arrayLimit: 1000,
    parameterLimit: 1000,
    allowPrototypes: false,
    allowDots: false,
    comma: false,
    duplicates: 'combine',
  })
}
