import type fcModule from 'fast-check'
import qs from 'qs'
import { type Kind, REFERENCE_FIELDS, type Spec } from './list-reference.js'

/**
 * Query strings the service should answer (known fields, known operators, values from the seeded
 * data), so that most runs compare a real filter, several conditions at once included.
 */
export function validQueryArb(fc: typeof fcModule, table: string): fcModule.Arbitrary<string> {
  const fields = Object.entries(REFERENCE_FIELDS[table] as Record<string, Spec>).filter(([, s]) => s.kind !== 'json')
  const names = fields.map(([name]) => name)
  const value = (kind: Kind) =>
    kind === 'number'
      ? fc.constantFrom('0', '5', '1000', '2000', '2999', '3000', '6000', '99999999999999', 'null')
      : fc.constantFrom(
          'A',
          'B',
          'C',
          'null',
          'B-1',
          'B-2',
          'R-1',
          'intake',
          'discharge',
          'vitals',
          't1',
          'ward',
          'nurse-a',
          'nurse-all',
          'viewer-a',
          'admin-1',
          'patient-1',
          'enc-2',
          'dr-1',
          'adult',
          'inbound',
          'bed-occupied',
        )
  const condition = fc.constantFrom(...fields).chain(([name, spec]) => {
    const ops =
      spec.kind === 'array'
        ? ['$eq', '$in', '$nin', '$ne', '$exists']
        : ['$eq', '$in', '$nin', '$ne', '$exists', '$lt', '$lte', '$gt', '$gte']
    return fc
      .tuple(
        fc.constant(name),
        fc.constantFrom(...ops),
        fc.array(value(spec.kind), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
      )
      .map(([n, op, vs, flag]) => {
        if (op === '$eq') return { [n]: vs[0] }
        if (op === '$exists') return { [n]: { $exists: String(flag) } }
        if (op === '$in' || op === '$nin') return { [n]: { [op]: vs } }
        return { [n]: { [op]: vs.find((v) => v !== 'null') ?? '1' } }
      })
  })
  const filter = fc.array(condition, { minLength: 1, maxLength: 2 }).map((cs) => Object.assign({}, ...cs))
  return fc
    .record(
      {
        where: filter,
        or: fc.array(filter, { minLength: 2, maxLength: 3 }),
        sort: fc.dictionary(
          fc.constantFrom(...names.filter((n) => n !== 'tags' && n !== 'seenBy')),
          fc.constantFrom('1', '-1'),
          { maxKeys: 2 },
        ),
        limit: fc.constantFrom('0', '1', '2', '3', '1000', '2000'),
        skip: fc.constantFrom('0', '1', '2', '5', '100'),
        select: fc.subarray(names, { maxLength: 3 }),
      },
      { requiredKeys: ['where'] },
    )
    .map((q) => {
      const out: Record<string, unknown> = { ...q.where }
      if (q.or) out.$or = q.or
      if (q.sort && Object.keys(q.sort).length > 0) out.$sort = q.sort
      if (q.limit) out.$limit = q.limit
      if (q.skip) out.$skip = q.skip
      if (q.select && q.select.length > 0) out.$select = q.select
      return qs.stringify(out, { encodeValuesOnly: true })
    })
}
