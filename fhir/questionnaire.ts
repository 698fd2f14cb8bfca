import { computableName } from '../domain/computable-name.js'
import type { FormItem } from '../schemas/form-templates.js'
import {
  ENTRY_FORMAT,
  EXTENSION,
  FHIR_ITEM_TYPE,
  type JsonObject,
  KEPT_ELEMENTS,
  keptShapeProblem,
  type Questionnaire,
  type QuestionnaireItem,
  type VersionedTemplate,
  YEAR_FORMAT,
} from './questionnaire-model.js'

// A form template as an R4 Questionnaire (docs/FHIR.md, "Questionnaire"). The way back, a
// Questionnaire into a form template, is in questionnaire-import.ts.

export {
  DEFAULT_TEMPLATE_TYPE,
  fromQuestionnaire,
  type ImportedTemplate,
  type ImportIssue,
  type ImportResult,
} from './questionnaire-import.js'
export * from './questionnaire-model.js'

/**
 * A text as a FHIR string (`[\r\n\t\u0020-\uFFFF]+` with some non-whitespace content): the control
 * characters a template may hold and FHIR may not are answered as U+FFFD, and so is a text of
 * whitespace only.
 */
export function fhirString(text: string): string {
  if (text.trim() === '') return '\uFFFD'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters FHIR strings exclude
  return text.replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, '\uFFFD')
}

export function questionnaireUrl(canonicalBase: string, id: string): string {
  return `${canonicalBase.replace(/\/+$/, '')}/Questionnaire/${id}`
}

export function toQuestionnaire(
  { record, version, lastUpdated }: VersionedTemplate,
  { canonicalBase }: { canonicalBase: string },
): Questionnaire {
  const extension: { url: string; valueString: string }[] = [
    { url: EXTENSION.type, valueString: fhirString(record.type) },
  ]
  if (record.subtype !== undefined) extension.push({ url: EXTENSION.subtype, valueString: fhirString(record.subtype) })
  const questionnaire: Questionnaire = {
    resourceType: 'Questionnaire',
    id: record.id,
    meta: { versionId: String(version), lastUpdated: new Date(lastUpdated).toISOString() },
    extension,
    url: questionnaireUrl(canonicalBase, record.id),
    version: String(version),
    name: computableName(record.name ?? record.type),
    status: record.hiddenAt === undefined ? 'active' : 'retired',
    date: new Date(record.createdAt).toISOString(),
  }
  if (record.name !== undefined) questionnaire.title = fhirString(record.name)
  if (record.description !== undefined) questionnaire.description = fhirString(record.description)
  Object.assign(questionnaire, keptElements(record.meta))
  const items = questionnaireItems(record.items ?? [])
  if (items.length > 0) questionnaire.item = items
  return questionnaire
}

function keptElements(meta: JsonObject | undefined): JsonObject {
  const kept = meta?.fhir
  if (typeof kept !== 'object' || kept === null || Array.isArray(kept)) return {}
  const out: JsonObject = {}
  // A REST client may have changed meta.fhir: only what a Questionnaire can hold goes out.
  for (const name of KEPT_ELEMENTS) {
    const value = (kept as JsonObject)[name]
    if (value !== undefined && keptShapeProblem(name, value) === undefined) out[name] = value
  }
  return out
}

/**
 * The items by `order` (those without one after, each group keeping the list's order), one group per
 * `set`. Every linkId is unique (que-2): the items' ids first, then the groups' (`set:` + the set's
 * name), a `~` added to one that an earlier one took (only ids a FHIR string cannot hold as they
 * are, or a set named like an item, come to that).
 */
export function questionnaireItems(items: readonly FormItem[]): QuestionnaireItem[] {
  const sorted = items
    .map((item, index) => ({ item, index }))
    .sort((a, b) => (a.item.order ?? Infinity) - (b.item.order ?? Infinity) || a.index - b.index)
    .map(({ item }) => item)
  const taken = new Set<string>()
  const linkIds = new Map(sorted.map((item) => [item, claim(taken, fhirString(item.id))]))
  const groups = new Map<string, QuestionnaireItem & { item: QuestionnaireItem[] }>()
  const top: QuestionnaireItem[] = []
  for (const item of sorted) {
    const question = questionItem(item, linkIds.get(item) as string)
    if (item.set === undefined) {
      top.push(question)
      continue
    }
    let group = groups.get(item.set)
    if (group === undefined) {
      const linkId = claim(taken, fhirString(`set:${item.set}`))
      group = { linkId, text: fhirString(item.set), type: 'group', item: [] }
      groups.set(item.set, group)
      top.push(group)
    }
    group.item.push(question)
  }
  return top
}

function claim(taken: Set<string>, wanted: string): string {
  let linkId = wanted
  while (taken.has(linkId)) linkId = `${linkId}~`
  taken.add(linkId)
  return linkId
}

function questionItem(item: FormItem, linkId: string): QuestionnaireItem {
  const question: QuestionnaireItem = { linkId, type: FHIR_ITEM_TYPE[item.type] }
  const extension: JsonObject[] = []
  if (item.type === 'year') extension.push({ url: ENTRY_FORMAT, valueString: YEAR_FORMAT })
  const choices = item.choices ?? []
  // Only choice items may carry answerOption in R4 (que-5 and the types' meaning): the others keep theirs in our extension.
  if (question.type !== 'choice')
    for (const choice of choices) extension.push({ url: EXTENSION.choice, valueString: fhirString(choice) })
  if (extension.length > 0) question.extension = extension
  if (item.question !== undefined) question.text = fhirString(item.question)
  if (item.required !== undefined) question.required = item.required
  if (item.type === 'checklist') question.repeats = true
  if (question.type === 'choice' && choices.length > 0) {
    question.answerOption = choices.map((choice) => ({ valueString: fhirString(choice) }))
  }
  return question
}
