import { CHOICE_ITEM_TYPES, FORM_TEMPLATE_LIMITS, type FormItem, type ItemType } from '../schemas/form-templates.js'
import {
  ENTRY_FORMAT,
  EXTENSION,
  FHIR_ITEM_TYPE,
  type JsonObject,
  KEPT_ELEMENTS,
  YEAR_FORMAT,
} from './questionnaire-model.js'

// A Questionnaire into a form template: every part a template cannot hold is an issue naming its
// path; nothing is dropped silently (the table is in docs/FHIR.md, "Questionnaire").

export interface ImportIssue {
  expression: string
  diagnostics: string
}

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

const ITEM_FIELDS = new Set(['linkId', 'text', 'type', 'required', 'repeats', 'answerOption', 'extension'])
const GROUP_FIELDS = new Set(['linkId', 'text', 'type', 'item', 'required', 'repeats'])

const WHY: Readonly<Record<string, string>> = {
  enableWhen: 'a form template asks every question: it cannot show an item only when another is answered',
  enableBehavior: 'a form template asks every question: it cannot show an item only when another is answered',
  answerValueSet: "a form template's choices are texts listed in the item: it cannot hold a value set",
  initial: 'a form template has no default answers',
  readOnly: 'every item of a form template is answered by its user',
  maxLength: 'a form template does not limit the length of an answer',
  code: 'a form template item keeps no codes',
  prefix: 'a form template item keeps no prefix',
  definition: 'a form template item keeps no definition',
  modifierExtension: 'a modifier extension changes the meaning of the item',
  contained: 'a form template keeps no contained resources',
  implicitRules: 'implicit rules change the meaning of the resource',
}

class Collector {
  readonly issues: ImportIssue[] = []
  add(expression: string, diagnostics: string) {
    this.issues.push({ expression, diagnostics })
  }
  refuse(path: string, key: string, owner: string) {
    if (key.startsWith('_')) {
      this.add(`${path}.${key.slice(1)}`, `${owner} cannot hold extensions or ids on a primitive value ('${key}')`)
    } else this.add(`${path}.${key}`, WHY[key] ?? `${owner} cannot hold '${key}'`)
  }
}

function text(issues: Collector, path: string, value: unknown, max: number): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length === 0) {
    issues.add(path, 'must be a non-empty string')
    return undefined
  }
  if (value.length > max) issues.add(path, `is ${value.length} characters long, a form template holds at most ${max}`)
  return value
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function listOf(issues: Collector, path: string, value: unknown): unknown[] {
  if (value === undefined) return []
  if (Array.isArray(value)) return value
  issues.add(path, 'must be an array')
  return []
}

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
    if (KEPT.has(key)) fhirMeta[key] = value
    else if (!IGNORED.has(key) && !MAPPED.has(key)) issues.refuse('Questionnaire', key, 'a form template')
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

function readItems(issues: Collector, items: unknown[]): FormItem[] {
  const out: FormItem[] = []
  const seen = new Map<string, string>()
  items.forEach((item, index) => {
    const path = `Questionnaire.item[${index}]`
    if (isObject(item) && item.type === 'group') out.push(...readGroup(issues, path, item, seen))
    else {
      const question = readQuestion(issues, path, item, seen)
      if (question) out.push(question)
    }
  })
  if (out.length > FORM_TEMPLATE_LIMITS.items) {
    issues.add(
      'Questionnaire.item',
      `has ${out.length} questions, a form template holds at most ${FORM_TEMPLATE_LIMITS.items}`,
    )
  }
  return out
}

function readGroup(issues: Collector, path: string, group: JsonObject, seen: Map<string, string>): FormItem[] {
  for (const key of Object.keys(group)) if (!GROUP_FIELDS.has(key)) issues.refuse(path, key, 'a group (a set)')
  if (group.required === true) issues.add(`${path}.required`, 'a set of a form template cannot be required as a whole')
  if (group.repeats === true) issues.add(`${path}.repeats`, 'a set of a form template is asked once')
  const set = text(issues, `${path}.text`, group.text ?? group.linkId, 200)
  const children = listOf(issues, `${path}.item`, group.item)
  if (children.length === 0) issues.add(`${path}.item`, 'a group needs at least one item')
  const out: FormItem[] = []
  children.forEach((child, index) => {
    const childPath = `${path}.item[${index}]`
    if (isObject(child) && child.type === 'group') {
      issues.add(childPath, 'a form template has one level of groups (its sets): a group cannot hold a group')
      return
    }
    const question = readQuestion(issues, childPath, child, seen)
    if (question && set !== undefined) out.push({ ...question, set })
  })
  return out
}

const ITEM_TYPE_OF: Readonly<Record<string, ItemType>> = {
  string: 'identification',
  boolean: 'trueorfalse',
  date: 'date',
  time: 'time',
}

function readQuestion(issues: Collector, path: string, item: unknown, seen: Map<string, string>): FormItem | undefined {
  if (!isObject(item)) {
    issues.add(path, 'must be an item object')
    return undefined
  }
  for (const key of Object.keys(item)) {
    // readOnly: false says what every template item is anyway
    if (!ITEM_FIELDS.has(key) && !(key === 'readOnly' && item[key] === false))
      issues.refuse(path, key, 'a form template item')
  }
  const id = text(issues, `${path}.linkId`, item.linkId, 100)
  if (id !== undefined) {
    const first = seen.get(id)
    if (first !== undefined) issues.add(`${path}.linkId`, `'${id}' repeats ${first}.linkId`)
    seen.set(id, path)
  }
  const { extra, year } = readItemExtensions(issues, path, item.extension)
  const type = itemType(issues, path, item, year)
  if (year && type !== 'year')
    issues.add(`${path}.extension`, `the ${ENTRY_FORMAT} ${YEAR_FORMAT} is for integer items`)
  const question = text(issues, `${path}.text`, item.text, FORM_TEMPLATE_LIMITS.question)
  const options = listOf(issues, `${path}.answerOption`, item.answerOption)
  if (options.length > 0 && FHIR_ITEM_TYPE[type ?? 'identification'] !== 'choice') {
    issues.add(`${path}.answerOption`, 'only a choice item can list answerOption')
  }
  const choices = [
    ...options.map((option, index) => readOption(issues, `${path}.answerOption[${index}]`, option)),
    ...extra,
  ]
  if (type !== undefined && CHOICE_ITEM_TYPES.has(type) && choices.length === 0) {
    issues.add(`${path}.answerOption`, `a ${type} item of a form template needs at least one answerOption`)
  }
  checkChoices(issues, path, choices)
  if (item.required !== undefined && typeof item.required !== 'boolean')
    issues.add(`${path}.required`, 'must be a boolean')
  if (id === undefined || type === undefined) return undefined
  const out: FormItem = { id, type }
  if (question !== undefined) out.question = question
  if (typeof item.required === 'boolean') out.required = item.required
  if (choices.length > 0) out.choices = choices.filter((choice): choice is string => choice !== undefined)
  return out
}

function itemType(issues: Collector, path: string, item: JsonObject, year: boolean): ItemType | undefined {
  const repeats = item.repeats === true
  if (item.repeats !== undefined && typeof item.repeats !== 'boolean')
    issues.add(`${path}.repeats`, 'must be a boolean')
  if (item.type === 'choice') return repeats ? 'checklist' : 'multiplechoice'
  if (repeats)
    issues.add(`${path}.repeats`, 'only a choice item of a form template takes several answers (a checklist)')
  if (item.type === 'integer' && year) return 'year'
  const type = typeof item.type === 'string' ? ITEM_TYPE_OF[item.type] : undefined
  if (type === undefined) {
    issues.add(`${path}.type`, `a form template has no item type for ${String(item.type)} (see the type table)`)
  }
  return type
}

function readItemExtensions(issues: Collector, path: string, value: unknown): { extra: string[]; year: boolean } {
  const extra: string[] = []
  let year = false
  listOf(issues, `${path}.extension`, value).forEach((extension, index) => {
    const at = `${path}.extension[${index}]`
    const url = isObject(extension) ? extension.url : undefined
    const given = isObject(extension) ? extension.valueString : undefined
    if (url === EXTENSION.choice) {
      const choice = text(issues, `${at}.valueString`, given, FORM_TEMPLATE_LIMITS.choice)
      if (choice !== undefined) extra.push(choice)
    } else if (url === ENTRY_FORMAT && given === YEAR_FORMAT) year = true
    else issues.add(at, `a form template item cannot hold the extension ${String(url)}`)
  })
  return { extra, year }
}

function readOption(issues: Collector, path: string, option: unknown): string | undefined {
  if (!isObject(option)) {
    issues.add(path, 'must be an answerOption object')
    return undefined
  }
  for (const key of Object.keys(option)) {
    if (key === 'valueString') continue
    if (key === 'initialSelected' && option[key] === false) continue
    if (key === 'initialSelected') issues.add(`${path}.initialSelected`, 'a form template has no default answers')
    else if (key.startsWith('value')) {
      issues.add(`${path}.${key}`, `a form template's choices are texts: use valueString, not ${key}`)
    } else issues.refuse(path, key, 'a choice of a form template')
  }
  if (!Object.keys(option).some((key) => key.startsWith('value'))) issues.add(path, 'needs a valueString')
  return text(issues, `${path}.valueString`, option.valueString, FORM_TEMPLATE_LIMITS.choice)
}

function checkChoices(issues: Collector, path: string, choices: (string | undefined)[]) {
  if (choices.length > FORM_TEMPLATE_LIMITS.choices) {
    issues.add(
      `${path}.answerOption`,
      `has ${choices.length} choices, a form template item holds at most ${FORM_TEMPLATE_LIMITS.choices}`,
    )
  }
  const first = new Map<string, number>()
  choices.forEach((choice, index) => {
    if (choice === undefined) return
    if (first.has(choice)) issues.add(`${path}.answerOption[${index}]`, `repeats the choice '${choice}'`)
    else first.set(choice, index)
  })
}
