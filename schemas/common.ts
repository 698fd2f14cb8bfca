import { type TObject, type TSchema, Type } from '@sinclair/typebox'
import { ID_PATTERN } from '../lib/ids.js'

// Primitives every resource shares, defined once.

export const Id = Type.String({ pattern: ID_PATTERN, description: 'server-generated id, 24 lowercase hex characters' })

export const IdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
)

export const Timestamp = Type.Integer({
  minimum: 0,
  maximum: 8_640_000_000_000_000,
  description: 'milliseconds since the Unix epoch',
})

/** A non-empty string of bounded length, the default for identifiers clients send. */
export function Text(maxLength = 200, options: { description?: string } = {}) {
  return Type.String({ minLength: 1, maxLength, ...options })
}

/** A string enum written as `enum` (clear validation messages and a plain OpenAPI enum). */
export function StringEnum<T extends string>(
  values: readonly T[],
  options: { description?: string; default?: T } = {},
) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options })
}

export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    message: Type.String(),
    code: Type.Optional(Type.String({ description: 'stable machine-readable reason, e.g. BED_OCCUPIED' })),
    name: Type.Optional(
      Type.String({
        description: 'the @feathersjs/errors class of the status (BadRequest, NotFound...), where it has one',
      }),
    ),
  },
  { $id: 'ErrorBody', description: 'every error has this shape' },
)

const ErrorRef = Type.Ref('ErrorBody')

/** Response schemas for the error statuses a route can answer, all with the shared error body. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const all = [400, 401, 403, 429, 500, ...statuses]
  return Object.fromEntries(all.map((status) => [status, ErrorRef]))
}

/** The list envelope: `{ <plural>: [...], total, limit, skip }`. */
export function ListEnvelope<K extends string, T extends TSchema>(plural: K, item: T) {
  return Type.Object({
    [plural]: Type.Array(item),
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 0 }),
    skip: Type.Integer({ minimum: 0 }),
  } as { [P in K]: ReturnType<typeof Type.Array<T>> } & {
    total: ReturnType<typeof Type.Integer>
    limit: ReturnType<typeof Type.Integer>
    skip: ReturnType<typeof Type.Integer>
  })
}

/** A record as lists return it: `$select` may leave out anything but the id. */
export function listItem<T extends TObject>(record: T) {
  return Type.Composite([Type.Pick(record, ['id']), Type.Partial(Type.Omit(record, ['id']))], {
    additionalProperties: false,
  })
}

/**
 * What a list accepts, for the OpenAPI document. The query engine (db/query.ts) checks the rest
 * (filters, operators, $sort, $select, $or) against each resource's fields.
 */
export const ListQueryString = Type.Object(
  {
    $limit: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'page size, default 100, at most 1000' })),
    $skip: Type.Optional(Type.String({ pattern: '^[0-9]+$', description: 'records to skip' })),
  },
  {
    additionalProperties: true,
    description:
      'Feathers-style filters, qs-encoded: field=value, field[$in][]=a, $ne, $nin, $lt, $lte, $gt, $gte, ' +
      '$exists, $or[0][field]=v, $sort[field]=1|-1, $select[]=field',
  },
)

/**
 * Nothing to send: no body (Fastify hands a missing body to validation as null), or `{}`. Anything
 * else is a mistake worth telling, not ignoring.
 */
export const NoBody = Type.Union([Type.Null(), Type.Object({}, { additionalProperties: false })], {
  description: 'no body, or {}',
})
