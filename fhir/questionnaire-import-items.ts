import { CHOICE_ITEM_TYPES, FORM_TEMPLATE_LIMITS, type FormItem, type ItemType } from '../schemas/form-templates.js'
import { type Collector, isObject, listOf, text } from './questionnaire-issues.js'
import { ENTRY_FORMAT, EXTENSION, FHIR_ITEM_TYPE, type JsonObject, YEAR_FORMAT } from './questionnaire-model.js'

// The items of a Questionnaire as a form template's items: questions, and groups one level deep (sets).

const ITEM_FIELDS = new Set(['linkId', 'text', 'type', 'required', 'repeats', 'answerOption', 'extension'])
const GROUP_FIELDS = new Set(['linkId', 'text', 'type', 'item', 'required', 'repeats'])

export function readItems(issues: Collector, items: unknown[]): FormItem[] {
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
