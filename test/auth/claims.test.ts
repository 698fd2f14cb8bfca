import fc from 'fast-check'
import { test } from 'tap'
import {
  type ClaimRules,
  claimAt,
  parseRoleMap,
  principalFromClaims,
  roleFrom,
  scopesFromClaims,
} from '../../domain/claims.js'
import type { Role } from '../../domain/principal.js'
import { propertyRuns } from '../property-runs.js'

const MAP = parseRoleMap('ward-nurse=write, ward-viewer=read,ward-admin=admin')
const RULES: ClaimRules = {
  accountClaims: ['preferred_username'],
  roleClaim: 'realm_access.roles',
  roleMap: MAP,
  facilityClaim: 'facility',
  allowUnbound: false,
}
const RANK: Record<Role, number> = { read: 0, write: 1, admin: 2 }

// Any JSON a provider could put in a claim: strings (mapped names among them), arrays, objects.
const groupName = fc.oneof(fc.constantFrom('ward-nurse', 'ward-viewer', 'ward-admin', 'other', ''), fc.string())
const leaf = fc.oneof(groupName, fc.integer(), fc.boolean(), fc.constant(null))
const claimValue = fc.oneof(leaf, fc.array(leaf, { maxLength: 5 }), fc.dictionary(fc.string(), leaf, { maxKeys: 3 }))
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined })

// Weighted towards readable claims, so every branch (refused for each claim, accepted) is reached often.
const mappedNames = fc.array(fc.constantFrom('ward-nurse', 'ward-viewer', 'ward-admin', 'other'), { maxLength: 4 })
const claimsShape = fc.record({
  preferred_username: maybe(fc.oneof({ arbitrary: fc.string({ minLength: 1 }), weight: 3 }, claimValue)),
  realm_access: maybe(
    fc.oneof(
      {
        arbitrary: fc.record({ roles: maybe(fc.oneof({ arbitrary: mappedNames, weight: 3 }, claimValue)) }),
        weight: 4,
      },
      claimValue,
    ),
  ),
  facility: maybe(fc.oneof({ arbitrary: fc.constantFrom('A', 'B'), weight: 2 }, claimValue)),
  extra: maybe(claimValue),
})

function strip<T extends object>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T
}

/** The role the map gives, computed another way: sorted by rank over the mapped names. */
function expectedRole(value: unknown): Role | null {
  const names = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string')
  const roles = names.flatMap((n) => (MAP.has(n) ? [MAP.get(n) as Role] : []))
  roles.sort((a, b) => RANK[b] - RANK[a])
  return roles[0] ?? null
}

function expectedSingle(value: unknown): string | undefined {
  const v = Array.isArray(value) && value.length === 1 ? value[0] : value
  return typeof v === 'string' && v.length > 0 ? v : undefined
}

test('claims of any shape give a principal exactly when account, role and facility are readable', async (t) => {
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(claimsShape, fc.boolean(), (raw, allowUnbound) => {
        const claims = strip(raw)
        const rules = { ...RULES, allowUnbound }
        const outcome = principalFromClaims(claims, rules)
        const account = expectedSingle(claims.preferred_username)
        const realm = claims.realm_access
        const roles =
          typeof realm === 'object' && realm !== null && !Array.isArray(realm)
            ? (realm as Record<string, unknown>).roles
            : undefined
        const role = expectedRole(roles)
        const facility = expectedSingle(claims.facility)
        const unbound = claims.facility === undefined && allowUnbound
        if (account === undefined) {
          return !outcome.ok && outcome.refusal.claim === 'preferred_username'
        }
        if (role === null) return !outcome.ok && outcome.refusal.claim === 'realm_access.roles'
        if (facility === undefined && !unbound) return !outcome.ok && outcome.refusal.claim === 'facility'
        return (
          outcome.ok &&
          outcome.principal.account === account &&
          outcome.principal.role === role &&
          outcome.principal.facility === (facility ?? null)
        )
      }),
      { numRuns: propertyRuns(500) },
    ),
  )
})

test('the highest mapped role wins, whatever the order', async (t) => {
  fc.assert(
    fc.property(fc.array(groupName, { maxLength: 6 }), (names) => {
      const role = roleFrom(names, MAP)
      const reversed = roleFrom([...names].reverse(), MAP)
      return role === expectedRole(names) && reversed === role
    }),
    { numRuns: propertyRuns(200) },
  )
  t.equal(roleFrom(['ward-viewer', 'ward-admin', 'ward-nurse'], MAP), 'admin')
  t.equal(roleFrom('ward-nurse', MAP), 'write', 'a single string counts as one role')
  t.equal(roleFrom(['other'], MAP), null)
})

test('a facility claim that is present but unreadable is refused even with OIDC_ALLOW_UNBOUND', async (t) => {
  const base = { preferred_username: 'ann', realm_access: { roles: ['ward-nurse'] } }
  const unbound = { ...RULES, allowUnbound: true }
  t.same(principalFromClaims(base, unbound), { ok: true, principal: { account: 'ann', role: 'write', facility: null } })
  t.match(principalFromClaims({ ...base, facility: ['A', 'B'] }, unbound), {
    ok: false,
    refusal: { claim: 'facility' },
  })
  t.match(principalFromClaims({ ...base, facility: 7 }, unbound), { ok: false, refusal: { claim: 'facility' } })
  t.match(principalFromClaims(base, RULES), { ok: false, refusal: { claim: 'facility' } })
  t.same(principalFromClaims({ ...base, facility: ['A'] }, RULES), {
    ok: true,
    principal: { account: 'ann', role: 'write', facility: 'A' },
  })
})

test('claim paths: nested names, and a name that has dots of its own', async (t) => {
  t.equal(claimAt({ a: { b: { c: 1 } } }, 'a.b.c'), 1)
  t.equal(claimAt({ 'https://x.example/roles': ['r'] }, 'https://x.example/roles')?.toString(), 'r')
  t.equal(claimAt({ a: ['x'] }, 'a.0'), undefined, 'arrays are not walked into by index')
  t.equal(claimAt({ a: 'text' }, 'a.length'), undefined)
  t.equal(claimAt({}, 'toString'), undefined, 'inherited names are not claims')
  t.equal(claimAt(null, 'sub'), undefined)
})

test('the role map is read strictly', async (t) => {
  t.same(
    [...parseRoleMap('a=read, /ward/nurses=write ,,')],
    [
      ['a', 'read'],
      ['/ward/nurses', 'write'],
    ],
  )
  t.throws(() => parseRoleMap('a=root'), /"a=root" is not name=read\|write\|admin/)
  t.throws(() => parseRoleMap('=read'), /is not name=/)
  t.throws(() => parseRoleMap('a=read,a=admin'), /mapped to both read and admin/)
})

test('account claims tried in order (upn,oid): the first the token has decides', async (t) => {
  const rules: ClaimRules = { ...RULES, accountClaims: ['upn', 'oid'] }
  const granted = { realm_access: { roles: ['ward-nurse'] }, facility: 'A' }
  const names = fc.record({
    upn: maybe(fc.oneof({ arbitrary: fc.string({ minLength: 1 }), weight: 3 }, claimValue)),
    oid: maybe(fc.oneof({ arbitrary: fc.uuid(), weight: 3 }, claimValue)),
  })
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(names, (raw) => {
        const claims = strip({ ...granted, ...raw }) as Record<string, unknown>
        const decider = ['upn', 'oid'].find((name) => claims[name] !== undefined)
        const expected = decider === undefined ? undefined : expectedSingle(claims[decider])
        const outcome = principalFromClaims(claims, rules)
        if (expected === undefined) return !outcome.ok && /`upn` or `oid`/.test(outcome.refusal.message)
        return outcome.ok && outcome.principal.account === expected
      }),
      { numRuns: propertyRuns(500) },
    ),
  )
  const account = (claims: object) => {
    const outcome = principalFromClaims({ ...granted, ...claims }, rules)
    return outcome.ok ? outcome.principal.account : outcome.refusal.claim
  }
  t.equal(account({ oid: 'app-guid' }), 'app-guid', 'an app-only token (no upn): its oid')
  t.equal(account({ upn: 'ann@hospital.example', oid: 'user-guid' }), 'ann@hospital.example', 'a person: the upn')
  t.equal(account({ upn: ['a', 'b'], oid: 'user-guid' }), 'upn', 'an unreadable upn is refused, never passed over')
  t.equal(account({}), 'upn,oid', 'none: refused naming both')
})

test('the scopes of a provider token: scope, scp (Entra spelling), app roles without either', async (t) => {
  t.same(scopesFromClaims({ scope: 'openid  user/Location.rs user/*.read' }), [
    'openid',
    'user/Location.rs',
    'user/*.read',
  ])
  t.same(scopesFromClaims({ scp: 'user.Location.rs user.all.read ward.access' }), [
    'user/Location.rs',
    'user/*.read',
    'ward.access',
  ])
  t.same(scopesFromClaims({ scp: ['user/Encounter.rs'] }), ['user/Encounter.rs'], "Okta's scp is an array")
  t.same(scopesFromClaims({ scope: 'user/Location.rs', scp: 'user.Encounter.rs' }), [
    'user/Location.rs',
    'user/Encounter.rs',
  ])
  t.same(scopesFromClaims({ roles: ['ward-nurse', 'system.Location.rs', 'system.all.read'] }), [
    'system/Location.rs',
    'system/*.read',
  ])
  t.same(
    scopesFromClaims({ scope: 'openid', roles: ['system.all.cruds'] }),
    ['openid'],
    'roles count only in a token that has no scope claim at all (an app-only token)',
  )
  t.same(scopesFromClaims({ scope: 'user.all.cruds' }), ['user.all.cruds'], 'the Entra spelling only in Entra claims')
  t.same(scopesFromClaims({}), [], 'none: granted nothing on /fhir')
  t.same(scopesFromClaims({ scope: 7, scp: { a: 1 } }), [], 'unreadable claims give nothing')
  t.same(scopesFromClaims({ scp: ['user/Encounter.rs', 3, null] }), ['user/Encounter.rs'])
})
