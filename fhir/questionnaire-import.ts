import { FORM_TEMPLATE_LIMITS, type FormItem } from '../schemas/form-templates.js'
import { readItems } from './questionnaire-import-items.js'
import { Collector, type ImportIssue, isObject, listOf, text } from './questionnaire-issues.js'
import { EXTENSION, type JsonObject, KEPT_ELEMENTS, type KeptElement, keptShapeProblem } from './questionnaire-model.js'

// A Questionnaire into a form template: every part a template cannot hold is an issue naming its
// path; nothing is dropped silently (the table is in docs/FHIR.md, "Questionnaire").

export type { ImportIssue }

/** What a Questionnaire says about a template: its fields (a create body) and whether it is retired. */
export interface ImportedTemplate {
  /** from our extension; absent: a new template's type is DEFAULT_TEMPLATE_TYPE, an updated one keeps its own */
  type?: string
  /** from our extension; absent: an updated template keeps its own */
  subtype?: string
  name?: string
  description?: string
  createdAt?: number
  items: FormItem[]
  /** the descriptive elements (KEPT_ELEMENTS) the template keeps in `meta.fhir`; absent when none */
  fhirMeta?: JsonObject
  retired: boolean
}

export type ImportResult = { ok: true; template: ImportedTemplate } | { ok: false; issues: ImportIssue[] }

/** The type of a template created from a Questionnaire that does not carry ours. */
export const DEFAULT_TEMPLATE_TYPE = 'questionnaire'

/** Server-owned or regenerated on every read: accepted and not kept (see the table). */
const IGNORED = new Set(['resourceType', 'id', 'meta', 'text', 'url', 'version', 'name'])
const KEPT: ReadonlySet<string> = new Set(KEPT_ELEMENTS)
const MAPPED = new Set(['title', 'description', 'status', 'date', 'item', 'extension'])

const DATE_TIME = /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/

/** A FHIR date or dateTime as milliseconds: a partial date is its first instant, in UTC. */
export function parseFhirDate(value: string): number | undefined {
  const m = DATE_TIME.exec(value)
  if (!m) return undefined
  if (m[4] !== undefined) {
    const ms = Date.parse(m[6] === undefined ? value.replace(/(Z|[+-]\d{2}:\d{2})$/, ':00$1') : value)
    return Number.isNaN(ms) ? undefined : ms
  }
  const [year, month, day] = [Number(m[1]), Number(m[2] ?? 1), Number(m[3] ?? 1)]
  const ms = Date.UTC(year, month - 1, day)
  const back = new Date(ms)
  if (back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) return undefined
  return ms
}

export function fromQuestionnaire(resource: unknown): ImportResult {
  const issues = new Collector()
  if (!isObject(resource) || resource.resourceType !== 'Questionnaire') {
    issues.add('Questionnaire', 'the body must be a Questionnaire resource')
    return { ok: false, issues: issues.issues }
  }
  const template: ImportedTemplate = { items: [], retired: false }
  const fhirMeta: JsonObject = {}
  for (const [key, value] of Object.entries(resource)) {
    if (KEPT.has(key)) {
      const problem = keptShapeProblem(key as KeptElement, value)
      if (problem === undefined) fhirMeta[key] = value
      else issues.add(`Questionnaire.${key}`, problem)
    } else if (!IGNORED.has(key) && !MAPPED.has(key)) issues.refuse('Questionnaire', key, 'a form template')
  }
  if (Object.keys(fhirMeta).length > 0) template.fhirMeta = fhirMeta
  if (isObject(resource.meta) && resource.meta.security !== undefined) {
    issues.add('Questionnaire.meta.security', 'a form template cannot enforce security labels')
  }
  readExtensions(issues, resource.extension, template)
  const name = text(issues, 'Questionnaire.title', resource.title, 500)
  if (name !== undefined) template.name = name
  const description = text(issues, 'Questionnaire.description', resource.description, FORM_TEMPLATE_LIMITS.description)
  if (description !== undefined) template.description = description
  readStatus(issues, resource.status, template)
  readDate(issues, resource.date, template)
  template.items = readItems(issues, listOf(issues, 'Questionnaire.item', resource.item))
  return issues.issues.length > 0 ? { ok: false, issues: issues.issues } : { ok: true, template }
}

function readExtensions(issues: Collector, value: unknown, template: ImportedTemplate) {
  listOf(issues, 'Questionnaire.extension', value).forEach((extension, index) => {
    const path = `Questionnaire.extension[${index}]`
    const url = isObject(extension) ? extension.url : undefined
    if (url === EXTENSION.type || url === EXTENSION.subtype) {
      const field = url === EXTENSION.type ? 'type' : 'subtype'
      const given = text(issues, `${path}.valueString`, (extension as JsonObject).valueString, 200)
      if (given !== undefined) template[field] = given
    } else issues.add(path, `a form template cannot hold the extension ${String(url)}`)
  })
}

function readStatus(issues: Collector, status: unknown, template: ImportedTemplate) {
  if (status === 'retired') template.retired = true
  else if (status !== 'active') {
    issues.add('Questionnaire.status', `a form template is active (shown) or retired (hidden), not ${String(status)}`)
  }
}

function readDate(issues: Collector, date: unknown, template: ImportedTemplate) {
  if (date === undefined) return
  const ms = typeof date === 'string' ? parseFhirDate(date) : undefined
  if (ms === undefined) issues.add('Questionnaire.date', 'must be a FHIR date or dateTime')
  else if (ms < 0) issues.add('Questionnaire.date', 'a form template starts in 1970 at the earliest')
  else template.createdAt = ms
}
