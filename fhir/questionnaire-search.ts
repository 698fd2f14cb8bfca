import type { Keyset } from './bundle.js'
import type { Questionnaire } from './questionnaire-model.js'
import { orLists, parseDate, periodMatches, type SearchDeclaration, type SearchQuery, stringMatches } from './search.js'

// Questionnaire search: which Questionnaires a query matches, and in which order. Pure.

export const QUESTIONNAIRE_SEARCH: SearchDeclaration = {
  params: [
    { name: '_id', type: 'token', documentation: 'the Questionnaire id (the form template id)' },
    { name: '_lastUpdated', type: 'date', documentation: 'when the form template last changed' },
    {
      name: 'name',
      type: 'string',
      modifiers: ['exact', 'contains'],
      documentation: 'the computable name (from the title)',
    },
    { name: 'title', type: 'string', modifiers: ['exact', 'contains'], documentation: "the form template's name" },
    { name: 'status', type: 'token', documentation: 'active (shown) or retired (hidden)' },
    { name: 'url', type: 'uri', documentation: 'the canonical URL: FHIR_CANONICAL_BASE/Questionnaire/<id>' },
    { name: 'version', type: 'token', documentation: 'the version (meta.versionId)' },
  ],
  sort: ['_id', 'date'],
}

function stringsMatch(query: SearchQuery, name: 'name' | 'title', actual: string): boolean {
  return Object.entries(query)
    .filter(([key]) => key.split(':')[0] === name)
    .every(([key, values]) =>
      values.every((value) => value.split(',').some((one) => stringMatches(one, key.split(':')[1], actual))),
    )
}

export function questionnaireMatches(resource: Questionnaire, query: SearchQuery): boolean {
  const tokens = (name: string, actual: string) => orLists(query, name).every((values) => values.includes(actual))
  const updated = Date.parse(resource.meta.lastUpdated)
  return (
    tokens('_id', resource.id) &&
    tokens('status', resource.status) &&
    tokens('url', resource.url) &&
    tokens('version', resource.version) &&
    stringsMatch(query, 'name', resource.name) &&
    stringsMatch(query, 'title', (resource.title as string | undefined) ?? '') &&
    (query._lastUpdated ?? []).every((value) => periodMatches(parseDate('_lastUpdated', value), updated, updated + 1))
  )
}

/** A descending id: each hex digit complemented, so ascending keys run the ids backwards. */
function descendingId(id: string): string {
  return id.replace(/[0-9a-f]/g, (digit) => (15 - Number.parseInt(digit, 16)).toString(16))
}

/**
 * The sort key of a Questionnaire (`_sort=_id` by default, or `date`, `-` for descending), ending in
 * its id, so no two compare equal and a page boundary is exact: pages never repeat or skip.
 */
export function questionnaireKey(sort: { key: string; descending: boolean } | undefined) {
  if (sort?.key === 'date') {
    const sign = sort.descending ? -1 : 1
    return (resource: Questionnaire): Keyset => [sign * Date.parse(resource.date), resource.id]
  }
  if (sort?.descending) return (resource: Questionnaire): Keyset => [descendingId(resource.id)]
  return (resource: Questionnaire): Keyset => [resource.id]
}
