import { type TObject, type TSchema, Type } from '@sinclair/typebox'
import { type FieldMap, type FieldSpec, LIST_LIMITS, operatorsOf } from '../db/query/query.js'

/**
 * The query parameters of a list operation as the OpenAPI document shows them, generated from the
 * field map the query engine (db/query.ts) checks queries against, so the two cannot drift. Only
 * for the document: the route's own querystring schema stays permissive and the engine validates.
 */

const EXAMPLE_TIME = 1_700_000_000_000
const COMPARED: Record<string, string> = { $lt: 'below', $lte: 'at most', $gt: 'above', $gte: 'at least' }

function example(name: string, spec: FieldSpec): string | number {
  return spec.type === 'number' ? EXAMPLE_TIME : `${name}-1`
}

/** A value as the query string carries it; for a number field the literal `null` (or nothing) means missing. */
function valueSchema(spec: FieldSpec): TSchema {
  if (spec.type === 'number') return Type.Union([Type.Integer(), Type.Literal('null')])
  if (spec.type === 'boolean') return Type.Union([Type.Boolean(), Type.Literal('null')])
  return Type.String()
}

function comparable(spec: FieldSpec): TSchema {
  return spec.type === 'number' ? Type.Integer() : spec.type === 'boolean' ? Type.Boolean() : Type.String()
}

function operatorSchema(name: string, spec: FieldSpec, op: string): TSchema {
  const value = example(name, spec)
  switch (op) {
    case '$in':
    case '$nin':
      return Type.Array(valueSchema(spec), {
        description: `${name} ${op === '$in' ? 'is' : 'is not'} one of these (null: missing)`,
        example: [value],
      })
    case '$ne':
      return Type.Union([valueSchema(spec)], { description: `${name} is not this (null: present)`, example: value })
    case '$exists':
      return Type.Boolean({ description: `${name} is present (true) or missing (false)`, example: true })
    default:
      return Type.Union([comparable(spec)], { description: `${name} is ${COMPARED[op] ?? op} this`, example: value })
  }
}

function fieldParameters(name: string, spec: FieldSpec, about: string | undefined): Record<string, TSchema> {
  const list = spec.array ? ' (a list: matches when it contains the value)' : ''
  const params: Record<string, TSchema> = {
    [name]: Type.Union([valueSchema(spec)], {
      description: `${about ? `${about}; ` : ''}equal to this${list}; null, or an empty value, means missing`,
      example: example(name, spec),
    }),
  }
  for (const op of operatorsOf(spec)) params[`${name}[${op}]`] = operatorSchema(name, spec, op)
  return params
}

/**
 * The parameters of a list: each filterable field with its operators, then $sort, $select, $or,
 * $limit and $skip. `record` gives the fields' descriptions; `extra` adds a route's own parameters.
 */
export function listParameters(fields: FieldMap, record: TObject, extra: Record<string, TSchema> = {}): TObject {
  const described = (name: string) => (record.properties[name] as { description?: string } | undefined)?.description
  const filterable = Object.entries(fields).filter(([, spec]) => operatorsOf(spec).length > 0)
  const sortable = filterable.filter(([, spec]) => !spec.array).map(([name]) => name)
  const properties: Record<string, TSchema> = {}
  for (const [name, spec] of filterable) Object.assign(properties, fieldParameters(name, spec, described(name)))
  const direction = Type.Unsafe<1 | -1>({ type: 'integer', enum: [1, -1] })
  properties.$sort = Type.Object(Object.fromEntries(sortable.map((name) => [name, Type.Optional(direction)])), {
    additionalProperties: false,
    description: 'sort keys in the order given, 1 ascending, -1 descending (default createdAt, then id)',
    example: { createdAt: -1 },
  })
  properties.$select = Type.Array(Type.Unsafe<string>({ type: 'string', enum: Object.keys(fields) }), {
    description: 'return only these fields (the id always comes)',
    example: ['id', 'createdAt'],
  })
  properties.$or = Type.Object(
    {},
    {
      additionalProperties: true,
      description: 'any of these filters, qs-encoded: $or[0][field]=value&$or[1][field][$in][]=value',
      example: { 0: { [sortable[1] ?? 'id']: example(sortable[1] ?? 'id', fields[sortable[1] ?? 'id'] as FieldSpec) } },
    },
  )
  properties.$limit = Type.Integer({
    minimum: 0,
    default: LIST_LIMITS.defaultLimit,
    description: `page size, at most ${LIST_LIMITS.maxLimit} (larger values are clamped); 0 counts only`,
    example: 50,
  })
  properties.$skip = Type.Integer({ minimum: 0, default: 0, description: 'records to skip', example: 0 })
  for (const [name, schema] of Object.entries(extra)) {
    const choices = (schema as { enum?: unknown[] }).enum
    properties[name] = schema.example === undefined && choices ? { ...schema, example: choices[0] } : schema
  }
  return Type.Object(
    Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, Type.Optional(schema)])),
  )
}
