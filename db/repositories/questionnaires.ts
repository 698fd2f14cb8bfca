import type { Database } from 'better-sqlite3'
import type { FormTemplate } from '../../schemas/form-templates.js'
import type { Scope } from '../query/list.js'
import { type FormTemplateRow, toRecord } from './form-template-content.js'

export interface TemplateForFhir {
  record: FormTemplate
  version: number
  /** when the template last changed: its latest audit entry (every write makes one), else its creation */
  lastUpdated: number
}

type Row = FormTemplateRow & { last_updated: number | null }

function toTemplate(row: Row): TemplateForFhir {
  return { record: toRecord(row), version: row.version, lastUpdated: row.last_updated ?? row.created_at }
}

/**
 * The form templates as the FHIR view reads them (fhir/routes/questionnaire.ts), each with its
 * version and last change. The facility scope is applied here, in every statement.
 */
export function createQuestionnaireReads(db: Database) {
  const last = `(SELECT max(a.at) FROM audit_log a WHERE a.resource = 'form-templates' AND a.record_id = t.id) AS last_updated`
  // A search reads every template the scope sees: without its print layout (up to 200 000
  // characters, never part of a Questionnaire), which could be most of what the search reads.
  const listed = `t.id, t.version, t.created_at, t.created_by, t.facility, t.type, t.subtype, t.name, t.description,
    NULL AS template, t.items, t.tags, t.meta, t.config, t.hidden_at, t.hidden_by, ${last}`
  const all = db.prepare<[], Row>(`SELECT ${listed} FROM form_templates t ORDER BY t.id`)
  const ofFacility = db.prepare<[string], Row>(
    `SELECT ${listed} FROM form_templates t WHERE t.facility = ? ORDER BY t.id`,
  )
  const one = db.prepare<[string], Row>(`SELECT t.*, ${last} FROM form_templates t WHERE t.id = ?`)
  return {
    /** Every template the scope sees, by id, without its print layout (`template`): for searches. */
    list(scope: Scope): TemplateForFhir[] {
      const rows = scope.facility === null ? all.all() : ofFacility.all(scope.facility)
      return rows.map(toTemplate)
    },
    /** The template, or undefined when it does not exist or the scope may not see it. */
    get(scope: Scope, id: string): TemplateForFhir | undefined {
      const row = one.get(id)
      if (row === undefined || (scope.facility !== null && row.facility !== scope.facility)) return undefined
      return toTemplate(row)
    },
  }
}

export type QuestionnaireReads = ReturnType<typeof createQuestionnaireReads>
