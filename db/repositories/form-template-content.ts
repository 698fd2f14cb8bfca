import { newId } from '../../lib/ids.js'
import { InvalidBodyError, refuseDeepNesting } from '../../lib/json-values.js'
import {
  CHOICE_ITEM_TYPES,
  FORM_TEMPLATE_LIMITS,
  type FormItem,
  type FormItemInput,
  type FormTemplate,
} from '../../schemas/form-templates.js'
import type { FieldMap } from '../query/query.js'

// How a form template is stored (one row, JSON columns, tags mirrored in a side table) and the
// checks on its content that a JSON schema cannot express.

/** Same code as Fastify's schema validation: for a client it is the same kind of mistake. */

export const FORM_TEMPLATE_FIELDS: FieldMap = {
  id: { column: 'id', type: 'string' },
  createdAt: { column: 'created_at', type: 'number' },
  createdBy: { column: 'created_by', type: 'string' },
  facility: { column: 'facility', type: 'string' },
  type: { column: 'type', type: 'string' },
  subtype: { column: 'subtype', type: 'string' },
  name: { column: 'name', type: 'string' },
  description: { column: 'description', type: 'string' },
  template: { column: 'template', type: 'string' },
  tags: { column: 'tags', type: 'string', array: { table: 'form_template_tags', key: 'template_id', value: 'tag' } },
  items: { column: 'items', type: 'string', selectOnly: true },
  meta: { column: 'meta', type: 'string', selectOnly: true },
  config: { column: 'config', type: 'string', selectOnly: true },
  hiddenAt: { column: 'hidden_at', type: 'number' },
  hiddenBy: { column: 'hidden_by', type: 'string' },
}

export interface FormTemplateRow {
  id: string
  version: number
  created_at: number
  created_by: string
  facility: string | null
  type: string
  subtype: string | null
  name: string | null
  description: string | null
  template: string | null
  items: string | null
  tags: string | null
  meta: string | null
  config: string | null
  hidden_at: number | null
  hidden_by: string | null
}

/** The columns a write sets, in the shape of the prepared statements' named parameters. */
export interface FormTemplateColumns {
  createdAt: number
  facility: string | null
  type: string
  subtype: string | null
  name: string | null
  description: string | null
  template: string | null
  items: string | null
  tags: string | null
  meta: string | null
  config: string | null
  hiddenAt: number | null
  hiddenBy: string | null
}

export function columnsOf(row: FormTemplateRow): FormTemplateColumns {
  return {
    createdAt: row.created_at,
    facility: row.facility,
    type: row.type,
    subtype: row.subtype,
    name: row.name,
    description: row.description,
    template: row.template,
    items: row.items,
    tags: row.tags,
    meta: row.meta,
    config: row.config,
    hiddenAt: row.hidden_at,
    hiddenBy: row.hidden_by,
  }
}

export function toRecord(row: FormTemplateRow): FormTemplate {
  const record: FormTemplate = { id: row.id, createdAt: row.created_at, createdBy: row.created_by, type: row.type }
  if (row.facility !== null) record.facility = row.facility
  if (row.subtype !== null) record.subtype = row.subtype
  if (row.name !== null) record.name = row.name
  if (row.description !== null) record.description = row.description
  if (row.template !== null) record.template = row.template
  if (row.items !== null) record.items = JSON.parse(row.items)
  if (row.tags !== null) record.tags = JSON.parse(row.tags)
  if (row.meta !== null) record.meta = JSON.parse(row.meta)
  if (row.config !== null) record.config = JSON.parse(row.config)
  if (row.hidden_at !== null) record.hiddenAt = row.hidden_at
  if (row.hidden_by !== null) record.hiddenBy = row.hidden_by
  return record
}

/**
 * Items as stored: every item has an id (generated when absent, unique within the template),
 * the choice types have choices, no item repeats a choice. The client's order is kept.
 */
export function normalizeItems(items: FormItemInput[], now: number): FormItem[] {
  const firstIndex = new Map<string, number>()
  items.forEach((item, index) => {
    const where = `body.items[${index}]`
    if (item.id !== undefined) {
      const first = firstIndex.get(item.id)
      if (first !== undefined) throw new InvalidBodyError(`${where}.id '${item.id}' repeats body.items[${first}].id`)
      firstIndex.set(item.id, index)
    }
    const choices = item.choices ?? []
    if (CHOICE_ITEM_TYPES.has(item.type) && choices.length === 0) {
      throw new InvalidBodyError(`${where}.choices must have at least one choice for a ${item.type} item`)
    }
    const repeated = choices.findIndex((choice, i) => choices.indexOf(choice) !== i)
    if (repeated >= 0) {
      throw new InvalidBodyError(`${where}.choices[${repeated}] repeats the choice '${choices[repeated]}'`)
    }
  })
  return items.map((item) => {
    let id = item.id ?? newId(now)
    while (item.id === undefined && firstIndex.has(id)) id = newId(now)
    // One key order for every stored item, so resending a list unchanged is recognized as such.
    const { order, set, question, required, type, choices } = item
    const entries = Object.entries({ id, order, set, question, required, type, choices })
    return Object.fromEntries(entries.filter(([, value]) => value !== undefined)) as FormItem
  })
}

/** A free-form object as stored, refused when it nests too deeply or its JSON text is over the limit. */
export function objectColumn(name: 'meta' | 'config', value: object): string {
  // Without a bound, JSON.stringify overflows the stack on deep nesting (a 500, not a 400).
  refuseDeepNesting(name, value, FORM_TEMPLATE_LIMITS.objectDepth)
  const text = JSON.stringify(value)
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > FORM_TEMPLATE_LIMITS.objectBytes) {
    throw new InvalidBodyError(
      `body.${name} is too large: ${bytes} bytes as JSON, at most ${FORM_TEMPLATE_LIMITS.objectBytes}`,
    )
  }
  return text
}
