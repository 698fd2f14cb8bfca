import fc from 'fast-check'
import { test } from 'tap'
import { type FhirInteraction, includedTypes, parseScope, refusalText, scopeDecision } from '../../fhir/scopes.js'
import { propertyRuns } from '../property-runs.js'

const INTERACTIONS: readonly FhirInteraction[] = ['read', 'search', 'create', 'update', 'delete']
const allowed = (scopes: readonly string[] | undefined, type: string, interaction: FhirInteraction) =>
  scopeDecision(scopes, type, interaction).allowed

/** The interactions each scope grants on Encounter, written out by hand. */
const TABLE: [string, FhirInteraction[]][] = [
  ['user/Encounter.r', ['read']],
  ['user/Encounter.s', ['search']],
  ['user/Encounter.rs', ['read', 'search']],
  ['user/Encounter.c', ['create']],
  ['user/Encounter.u', ['update']],
  ['user/Encounter.d', ['delete']],
  ['user/Encounter.cud', ['create', 'update', 'delete']],
  ['user/Encounter.cruds', ['read', 'search', 'create', 'update', 'delete']],
  ['system/Encounter.rs', ['read', 'search']],
  ['user/*.rs', ['read', 'search']],
  ['system/*.cruds', ['read', 'search', 'create', 'update', 'delete']],
  // v1 spellings
  ['user/Encounter.read', ['read', 'search']],
  ['user/Encounter.write', ['create', 'update', 'delete']],
  ['user/Encounter.*', ['read', 'search', 'create', 'update', 'delete']],
  ['user/*.read', ['read', 'search']],
  ['system/*.*', ['read', 'search', 'create', 'update', 'delete']],
  // patient/ grants nothing on this server
  ['patient/Encounter.rs', []],
  ['patient/*.cruds', []],
  ['patient/*.read', []],
  // another resource type
  ['user/Location.cruds', []],
  ['user/Location.read', []],
  // malformed: ignored, never widened
  ['user/Encounter.sr', []],
  ['user/Encounter.rr', []],
  ['user/Encounter.cruds?status=in-progress', []],
  ['user/Encounter.R', []],
  ['user/Encounter.', []],
  ['user/Encounter', []],
  ['user/encounter.rs', []],
  ['User/Encounter.rs', []],
  ['user/Encounter.rs ', []],
  [' user/Encounter.rs', []],
  ['user/Encounter.rsx', []],
  ['user/Encounter.readwrite', []],
  ['user/Encounter.**', []],
  ['user/**.rs', []],
  ['user/Encounter.Location.rs', []],
  ['user//Encounter.rs', []],
  ['admin/Encounter.rs', []],
  ['user/Encounter.rs/system', []],
  ['openid', []],
  ['fhirUser', []],
  ['launch/patient', []],
  ['', []],
]

test('each scope grants exactly the interactions of its permissions', async (t) => {
  for (const [scope, granted] of TABLE)
    for (const interaction of INTERACTIONS)
      t.equal(
        allowed([scope], 'Encounter', interaction),
        granted.includes(interaction),
        `${JSON.stringify(scope)} ${interaction}`,
      )
})

test('no scope limit (a service token) allows everything; no scopes allow nothing', async (t) => {
  for (const interaction of INTERACTIONS) {
    t.ok(allowed(undefined, 'Encounter', interaction), `undefined: ${interaction}`)
    t.notOk(allowed([], 'Encounter', interaction), `[]: ${interaction}`)
  }
})

test('several scopes: each grants its own, and what they grant adds up', async (t) => {
  const scopes = ['user/Location.rs', 'user/Encounter.c', 'openid', 'user/Encounter.sr']
  t.ok(allowed(scopes, 'Location', 'search'))
  t.ok(allowed(scopes, 'Encounter', 'create'))
  t.notOk(allowed(scopes, 'Encounter', 'read'), 'the malformed .sr adds nothing')
  t.notOk(allowed(scopes, 'Questionnaire', 'read'))
})

test('a refusal names the scope that would grant it, in the token context', async (t) => {
  t.same(scopeDecision(['user/Location.rs'], 'Encounter', 'search'), { allowed: false, needed: 'user/Encounter.rs' })
  t.same(scopeDecision(['user/Location.rs'], 'Encounter', 'read'), { allowed: false, needed: 'user/Encounter.rs' })
  t.same(scopeDecision(['user/*.rs'], 'Questionnaire', 'create'), { allowed: false, needed: 'user/Questionnaire.c' })
  t.same(scopeDecision(['user/*.rs'], 'Questionnaire', 'update'), { allowed: false, needed: 'user/Questionnaire.u' })
  t.same(scopeDecision(['user/*.rs'], 'Questionnaire', 'delete'), { allowed: false, needed: 'user/Questionnaire.d' })
  t.same(scopeDecision(['system/Location.rs'], 'Encounter', 'search'), {
    allowed: false,
    needed: 'system/Encounter.rs',
  })
  t.same(
    scopeDecision(['system/Location.rs', 'user/Location.rs'], 'Encounter', 'search'),
    { allowed: false, needed: 'user/Encounter.rs' },
    'a token with user/ scopes is a user',
  )
  t.same(scopeDecision([], 'Encounter', 'search'), { allowed: false, needed: 'user/Encounter.rs' })
  t.same(scopeDecision(['patient/Encounter.rs'], 'Encounter', 'search'), {
    allowed: false,
    needed: 'user/Encounter.rs',
  })
})

test('the refusal text says the missing scope, and why a patient/ scope does not count', async (t) => {
  t.equal(
    refusalText(['user/Location.rs'], 'Encounter', 'read', 'user/Encounter.rs'),
    'missing scope user/Encounter.rs',
  )
  t.match(
    refusalText(['patient/Encounter.read'], 'Encounter', 'read', 'user/Encounter.rs'),
    /^missing scope user\/Encounter\.rs \(patient\/ scopes grant nothing on this server/,
  )
  t.equal(
    refusalText(['patient/Encounter.c'], 'Encounter', 'read', 'user/Encounter.rs'),
    'missing scope user/Encounter.rs',
    'a patient/ scope that would not have granted it either is not mentioned',
  )
})

test('parseScope reads the grammar and nothing else', async (t) => {
  t.same(parseScope('user/Encounter.rs'), {
    context: 'user',
    resourceType: 'Encounter',
    permissions: new Set(['r', 's']),
  })
  t.same(parseScope('system/*.write')?.permissions, new Set(['c', 'u', 'd']))
  t.equal(parseScope('user/Encounter.constructor'), null, 'no property of an object is a spelling')
  t.equal(parseScope('user/Encounter.toString'), null)
})

test('the types a search includes need scopes of their own', async (t) => {
  t.same(includedTypes({ _revinclude: 'Encounter:location' }), ['Encounter'])
  t.same(includedTypes({ _include: 'Encounter:location' }), ['Location'])
  t.same(includedTypes({ _include: ['Encounter:subject:Patient', 'Location:partof'] }), ['Patient', 'Location'])
  t.same(includedTypes({ _include: 'Encounter:location,Encounter:part-of:Encounter' }), ['Location', 'Encounter'])
  t.same(includedTypes({ _include: 'Encounter:unknown', _revinclude: ':location' }), [], 'nothing to name')
  t.same(includedTypes({ '_include:iterate': 'Encounter:location', name: 'x' }), [], 'only _include and _revinclude')
  t.same(includedTypes({}), [])
})

// ---- The property: an independent model of the grammar, written without regular expressions. ----

const ORDER = 'cruds'
const LETTER: Record<FhirInteraction, string> = { read: 'r', search: 's', create: 'c', update: 'u', delete: 'd' }

/** The letters a permission string means, or null when it is not one. */
function modelLetters(spelled: string): string | null {
  if (spelled === 'read') return 'rs'
  if (spelled === 'write') return 'cud'
  if (spelled === '*') return ORDER
  if (spelled === '') return null
  let last = -1
  for (const ch of spelled) {
    const at = ORDER.indexOf(ch)
    if (at <= last) return null
    last = at
  }
  return spelled
}

function modelGrants(scope: string, type: string, interaction: FhirInteraction): boolean {
  const slash = scope.indexOf('/')
  if (slash < 0) return false
  const context = scope.slice(0, slash)
  const rest = scope.slice(slash + 1)
  const dot = rest.indexOf('.')
  if (dot < 0) return false
  const scopeType = rest.slice(0, dot)
  const letters = modelLetters(rest.slice(dot + 1))
  if (context !== 'user' && context !== 'system') return false
  const typeOk =
    scopeType === '*' ||
    (scopeType.length <= 64 &&
      scopeType[0] !== undefined &&
      scopeType[0] >= 'A' &&
      scopeType[0] <= 'Z' &&
      isLetters(scopeType))
  if (!typeOk || letters === null) return false
  return (scopeType === '*' || scopeType === type) && letters.includes(LETTER[interaction])
}

function isLetters(text: string): boolean {
  for (const ch of text) if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) return false
  return true
}

const TYPES = ['Encounter', 'Location', 'Questionnaire']
const part = <T>(values: T[]) => fc.constantFrom(...values)
// Mostly near the grammar (every branch reached often), some of it anything at all.
const nearScope = fc
  .tuple(
    part(['user', 'system', 'patient', 'User', 'admin', '', 'user/']),
    part(['/', '/', '/', '.', '//', '']),
    fc.oneof(part([...TYPES, '*', '**', 'encounter', 'Encounter.Location', '']), fc.string({ maxLength: 4 })),
    part(['.', '.', '.', '/', '']),
    fc.oneof(
      part(['read', 'write', '*', 'rs', 'cruds', 'sr', 'cud', 'rr', '', 'READ', 'rs?x=1']),
      fc.subarray([...ORDER]).map((letters) => letters.join('')),
      fc.shuffledSubarray([...ORDER]).map((letters) => letters.join('')),
      fc.string({ maxLength: 6 }),
    ),
  )
  .map((parts) => parts.join(''))
const scopeText = fc.oneof({ arbitrary: nearScope, weight: 5 }, { arbitrary: fc.string(), weight: 1 })

test('no scope string grants more (or less) than the model of its permissions', async () => {
  fc.assert(
    fc.property(
      fc.array(scopeText, { maxLength: 5 }),
      part(TYPES),
      part([...INTERACTIONS]),
      (scopes, type, interaction) => {
        const expected = scopes.some((scope) => modelGrants(scope, type, interaction))
        const decision = scopeDecision(scopes, type, interaction)
        if (decision.allowed !== expected) throw new Error(`${JSON.stringify(scopes)} ${type} ${interaction}`)
        // What a refusal names does grant it, alone.
        if (!decision.allowed && !modelGrants(decision.needed, type, interaction))
          throw new Error(`needed ${decision.needed} would not grant ${type} ${interaction}`)
      },
    ),
    { numRuns: propertyRuns(2000) },
  )
})
