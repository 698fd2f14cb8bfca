/**
 * SMART App Launch 2.x scopes (docs/FHIR.md, "SMART scopes"): what a provider token's scopes let it
 * do on /fhir, on top of its role. Pure: no Fastify, no claims, no clock.
 *
 * Grammar honoured: `<context>/<type>.<permissions>`, context `user` or `system`, type a resource
 * type or `*`, permissions a non-empty subsequence of `cruds` in that order (`rs`, `cud`, `cruds`),
 * or the v1 spellings `read` (= `rs`), `write` (= `cud`) and `*` (= `cruds`). Anything else is
 * ignored and grants nothing: a scope this server cannot read never widens what a token may do.
 * `patient/` scopes are read but grant nothing here (the ward keeps no patient compartment).
 */

export type FhirInteraction = 'read' | 'search' | 'create' | 'update' | 'delete'

export type ScopeContext = 'user' | 'system' | 'patient'

export type Permission = 'c' | 'r' | 'u' | 'd' | 's'

export interface ResourceScope {
  context: ScopeContext
  /** A resource type, or `*` for every type. */
  resourceType: string
  permissions: ReadonlySet<Permission>
}

export type ScopeDecision = { allowed: true } | { allowed: false; needed: string }

const PERMISSION_OF: Record<FhirInteraction, Permission> = {
  read: 'r',
  search: 's',
  create: 'c',
  update: 'u',
  delete: 'd',
}

/**
 * What a refusal names: read access is asked for as `.rs` (what v1's `.read` means, and what a
 * client that reads also searches with); each write is its own letter.
 */
const NEEDED_OF: Record<FhirInteraction, string> = {
  read: 'rs',
  search: 'rs',
  create: 'c',
  update: 'u',
  delete: 'd',
}

const V1_PERMISSIONS: ReadonlyMap<string, string> = new Map([
  ['read', 'rs'],
  ['write', 'cud'],
  ['*', 'cruds'],
])

const SCOPE = /^(user|system|patient)\/(\*|[A-Z][A-Za-z]{0,63})\.([a-z*]+)$/
const V2_PERMISSIONS = /^c?r?u?d?s?$/

/** The scope as this server reads it, or null: not a resource scope it honours (ignored). */
export function parseScope(text: string): ResourceScope | null {
  const match = SCOPE.exec(text)
  if (match === null) return null
  const [, context, resourceType, spelled] = match as unknown as [string, ScopeContext, string, string]
  const letters = V1_PERMISSIONS.get(spelled) ?? (V2_PERMISSIONS.test(spelled) ? spelled : '')
  if (letters === '') return null
  return { context, resourceType, permissions: new Set(letters as Iterable<Permission>) }
}

function grants(scope: ResourceScope, resourceType: string, permission: Permission): boolean {
  if (scope.context === 'patient') return false
  return (scope.resourceType === '*' || scope.resourceType === resourceType) && scope.permissions.has(permission)
}

/**
 * Whether a token's scopes let it do `interaction` on `resourceType`. `undefined` is a token that
 * carries no scopes (a service token: its role alone decides); an empty list grants nothing.
 * Refused, `needed` names the scope that would grant it, in the token's own context: `system/`
 * for a token holding only `system/` scopes, `user/` otherwise.
 */
export function scopeDecision(
  scopes: readonly string[] | undefined,
  resourceType: string,
  interaction: FhirInteraction,
): ScopeDecision {
  if (scopes === undefined) return { allowed: true }
  const permission = PERMISSION_OF[interaction]
  const parsed = scopes.map(parseScope).filter((scope) => scope !== null)
  if (parsed.some((scope) => grants(scope, resourceType, permission))) return { allowed: true }
  return { allowed: false, needed: `${contextOf(parsed)}/${resourceType}.${NEEDED_OF[interaction]}` }
}

function contextOf(parsed: readonly ResourceScope[]): 'user' | 'system' {
  const systemOnly = parsed.some((s) => s.context === 'system') && !parsed.some((s) => s.context === 'user')
  return systemOnly ? 'system' : 'user'
}

/**
 * Why a token is refused, for the OperationOutcome's diagnostics: the missing scope, and a word
 * when the token holds a patient/ scope that would have granted it elsewhere.
 */
export function refusalText(
  scopes: readonly string[],
  resourceType: string,
  interaction: FhirInteraction,
  needed: string,
): string {
  const permission = PERMISSION_OF[interaction]
  const patientWouldHave = scopes.some((text) => {
    const scope = parseScope(text)
    return scope?.context === 'patient' && grants({ ...scope, context: 'user' }, resourceType, permission)
  })
  const base = `missing scope ${needed}`
  return patientWouldHave
    ? `${base} (patient/ scopes grant nothing on this server, which keeps no patient compartment: ask for user/ or system/ scopes)`
    : base
}

/** The resource type each reference search parameter of an `_include` points at (without a `:Type`). */
const REFERENCE_TARGETS: ReadonlyMap<string, string> = new Map([
  ['location', 'Location'],
  ['partof', 'Location'],
])

function values(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value]
  return list.filter((v): v is string => typeof v === 'string').flatMap((v) => v.split(','))
}

/**
 * The resource types a search's `_include` (`Encounter:location` adds Locations) and
 * `_revinclude` (`Encounter:location` adds Encounters) would put in its Bundle: each needs a scope
 * of its own, or a Location scope would read Encounters through an include.
 */
export function includedTypes(query: Readonly<Record<string, unknown>>): string[] {
  const types = new Set<string>()
  for (const value of values(query._include)) {
    const [, param = '', target] = value.split(':')
    const type = target ?? REFERENCE_TARGETS.get(param)
    if (type !== undefined) types.add(type)
  }
  for (const value of values(query._revinclude)) {
    const [source = ''] = value.split(':')
    if (source !== '') types.add(source)
  }
  return [...types]
}

/** The scopes /.well-known/smart-configuration lists: what this server honours. */
export const SCOPES_SUPPORTED: readonly string[] = [
  'openid',
  'user/*.cruds',
  'user/*.rs',
  'system/*.cruds',
  'system/*.rs',
]
