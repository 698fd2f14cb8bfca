import type { FormTemplate, ItemType } from '../schemas/form-templates.js'

// The vocabulary the two directions of the Questionnaire mapping share (questionnaire.ts, questionnaire-import.ts).

/** Our extensions: the template's `type` and `subtype`, and the choices of items that are not choice items. */
export const EXTENSION = {
  type: 'urn:facility-service:form-template-type',
  subtype: 'urn:facility-service:form-template-subtype',
  choice: 'urn:facility-service:form-template-choice',
} as const
/** The standard hint on an integer item that it asks for a year (the template's `year` items). */
export const ENTRY_FORMAT = 'http://hl7.org/fhir/StructureDefinition/entryFormat'
export const YEAR_FORMAT = 'YYYY'

/** Seed item type -> FHIR item type; checklist is a choice that repeats. */
export const FHIR_ITEM_TYPE: Readonly<Record<ItemType, string>> = {
  identification: 'string',
  multiplechoice: 'choice',
  trueorfalse: 'boolean',
  checklist: 'choice',
  date: 'date',
  time: 'time',
  year: 'integer',
}

/**
 * Questionnaire elements that describe the form and change nothing in how it is filled in: a
 * template keeps them in `meta.fhir` and they come back as they were imported.
 */
export const KEPT_ELEMENTS = [
  'language',
  'identifier',
  'derivedFrom',
  'experimental',
  'subjectType',
  'publisher',
  'contact',
  'useContext',
  'jurisdiction',
  'purpose',
  'copyright',
  'approvalDate',
  'lastReviewDate',
  'effectivePeriod',
  'code',
] as const

export type JsonObject = Record<string, unknown>

export interface QuestionnaireItem extends JsonObject {
  linkId: string
  type: string
  text?: string
  item?: QuestionnaireItem[]
}

export interface Questionnaire extends JsonObject {
  resourceType: 'Questionnaire'
  id: string
  meta: { versionId: string; lastUpdated: string }
  url: string
  version: string
  name: string
  status: 'active' | 'retired'
  date: string
  item?: QuestionnaireItem[]
}

/** A template as the FHIR view reads it: the record, its version and when it last changed. */
export interface VersionedTemplate {
  record: FormTemplate
  version: number
  lastUpdated: number
}
