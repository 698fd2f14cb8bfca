import type { Database } from 'better-sqlite3'
import { ForbiddenFacilityError, NotFoundError } from '../../domain/errors.js'
import type { Principal } from '../../domain/principal.js'
import { assertVersion, type IfMatch } from '../../domain/versions.js'
import { newId } from '../../lib/ids.js'
import type { FormTemplate, FormTemplateCreate, FormTemplatePatch } from '../../schemas/form-templates.js'
import { createLister, facilityCondition, type Scope } from '../query/list.js'
import { parseListQuery } from '../query/query.js'
import type { WriteQueue } from '../write-queue.js'
import { type ChangeLogs, logChange } from './changes.js'
import {
  columnsOf,
  FORM_TEMPLATE_FIELDS,
  type FormTemplateColumns,
  type FormTemplateRow,
  normalizeItems,
  objectColumn,
  toRecord,
} from './form-template-content.js'

const RESOURCE = 'form-templates' as const

export interface Versioned<T> {
  record: T
  version: number
}

type Content = Omit<FormTemplatePatch, 'type' | 'createdAt' | 'facility' | 'hide'>
type ContentColumns = Partial<Pick<FormTemplateColumns, keyof Content>>

/** The stored form of each content field the input names; null removes a field. */
function contentColumns(input: Content, now: number): ContentColumns {
  const out: ContentColumns = {}
  for (const name of ['subtype', 'name', 'description', 'template'] as const) {
    if (input[name] !== undefined) out[name] = input[name]
  }
  if (input.items !== undefined) out.items = input.items && JSON.stringify(normalizeItems(input.items, now))
  if (input.tags !== undefined) out.tags = input.tags && JSON.stringify(input.tags)
  if (input.meta !== undefined) out.meta = input.meta && objectColumn('meta', input.meta)
  if (input.config !== undefined) out.config = input.config && objectColumn('config', input.config)
  return out
}

export interface FormTemplateRepositoryOptions extends ChangeLogs {
  writes: WriteQueue
}

export function createFormTemplateRepository(db: Database, opts: FormTemplateRepositoryOptions) {
  const insert = db.prepare(
    `INSERT INTO form_templates (id, created_at, created_by, facility, type, subtype, name, description, template,
       items, tags, meta, config, hidden_at, hidden_by)
     VALUES (:id, :createdAt, :createdBy, :facility, :type, :subtype, :name, :description, :template,
       :items, :tags, :meta, :config, :hiddenAt, :hiddenBy)`,
  )
  const byId = db.prepare<[string], FormTemplateRow>('SELECT * FROM form_templates WHERE id = ?')
  const update = db.prepare(
    `UPDATE form_templates SET created_at = :createdAt, facility = :facility, type = :type, subtype = :subtype,
       name = :name, description = :description, template = :template, items = :items, tags = :tags, meta = :meta,
       config = :config, hidden_at = :hiddenAt, hidden_by = :hiddenBy, version = version + 1
     WHERE id = :id`,
  )
  const remove = db.prepare('DELETE FROM form_templates WHERE id = ?')
  const insertTag = db.prepare('INSERT INTO form_template_tags (tag, template_id) VALUES (?, ?)')
  const removeTags = db.prepare('DELETE FROM form_template_tags WHERE template_id = ?')
  const list = createLister<FormTemplateRow, FormTemplate>(db, 'form_templates', toRecord)

  /** The row if it exists and the caller's facility may see it; otherwise 404, revealing nothing. */
  function visibleRow(scope: Scope, id: string): FormTemplateRow {
    const row = byId.get(id)
    if (!row || (scope.facility !== null && row.facility !== scope.facility))
      throw new NotFoundError('form template', id)
    return row
  }

  function writeTags(id: string, tags: string | null) {
    removeTags.run(id)
    for (const tag of tags === null ? [] : (JSON.parse(tags) as string[])) insertTag.run(tag, id)
  }

  // Each write runs in the connection's write queue (group commit, see write-queue.ts): atomic on
  // its own, its promise settled once its batch is durable.
  const { writes } = opts

  function createRow(actor: Principal, id: string, columns: FormTemplateColumns, now: number) {
    insert.run({ id, createdBy: actor.account, ...columns })
    writeTags(id, columns.tags)
    const row = byId.get(id) as FormTemplateRow
    const record = toRecord(row)
    const change = { resource: RESOURCE, recordId: id, facility: row.facility, before: null, after: record }
    logChange(opts, actor, { ...change, operation: 'create' }, now)
    return { record, version: row.version }
  }

  function patchRow(
    actor: Principal,
    id: string,
    changes: FormTemplatePatch,
    content: ContentColumns,
    ifMatch: IfMatch,
  ): Versioned<FormTemplate> {
    const row = visibleRow(actor, id)
    assertVersion(ifMatch, 'form template', id, row.version)
    if (changes.facility !== undefined && actor.facility !== null && changes.facility !== actor.facility) {
      throw new ForbiddenFacilityError(actor.facility, changes.facility)
    }
    const now = Date.now()
    const before = columnsOf(row)
    const next: FormTemplateColumns = { ...before, ...content }
    if (changes.type !== undefined) next.type = changes.type
    if (changes.createdAt !== undefined) next.createdAt = changes.createdAt
    if (changes.facility !== undefined) next.facility = changes.facility
    if (changes.hide === true && row.hidden_at === null) Object.assign(next, { hiddenAt: now, hiddenBy: actor.account })
    if (changes.hide === false) Object.assign(next, { hiddenAt: null, hiddenBy: null })
    const names = Object.keys(next) as (keyof FormTemplateColumns)[]
    if (names.every((name) => next[name] === before[name])) return { record: toRecord(row), version: row.version }

    update.run({ id, ...next })
    if (next.tags !== before.tags) writeTags(id, next.tags)
    const updated = byId.get(id) as FormTemplateRow
    const record = toRecord(updated)
    const change = { resource: RESOURCE, recordId: id, facility: row.facility, before: toRecord(row), after: record }
    logChange(opts, actor, { ...change, operation: 'patch' }, now)
    return { record, version: updated.version }
  }

  function destroyRow(actor: Principal, id: string, ifMatch: IfMatch): FormTemplate {
    const row = visibleRow(actor, id)
    assertVersion(ifMatch, 'form template', id, row.version)
    remove.run(id)
    const record = toRecord(row)
    const change = { resource: RESOURCE, recordId: id, facility: row.facility, before: record, after: null }
    logChange(opts, actor, { ...change, operation: 'delete' }, Date.now())
    return record
  }

  return {
    create(actor: Principal, facility: string | null, input: FormTemplateCreate): Promise<Versioned<FormTemplate>> {
      const now = Date.now()
      const columns: FormTemplateColumns = {
        createdAt: input.createdAt ?? now,
        facility,
        type: input.type,
        subtype: null,
        name: null,
        description: null,
        template: null,
        items: null,
        tags: null,
        meta: null,
        config: null,
        hiddenAt: null,
        hiddenBy: null,
        ...contentColumns(input, now),
      }
      const id = newId(now)
      return writes.run(() => createRow(actor, id, columns, now))
    },
    /** The record and its version: `${id}:${version}` identifies one state of the template. */
    get(scope: Scope, id: string): Versioned<FormTemplate> {
      const row = visibleRow(scope, id)
      return { record: toRecord(row), version: row.version }
    },
    list: (scope: Scope, query: Record<string, unknown>) =>
      list(facilityCondition(scope), parseListQuery(query, FORM_TEMPLATE_FIELDS)),
    patch(
      actor: Principal,
      id: string,
      changes: FormTemplatePatch,
      ifMatch: IfMatch,
    ): Promise<Versioned<FormTemplate>> {
      const content = contentColumns(changes, Date.now())
      return writes.run(() => patchRow(actor, id, changes, content, ifMatch))
    },
    remove: (actor: Principal, id: string, ifMatch: IfMatch): Promise<FormTemplate> =>
      writes.run(() => destroyRow(actor, id, ifMatch)),
  }
}

export type FormTemplateRepository = ReturnType<typeof createFormTemplateRepository>
