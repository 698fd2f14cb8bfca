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

type Shape = 'text' | 'code' | 'boolean' | 'date' | 'texts' | 'objects' | 'object'

/** The JSON shape of each kept element (KEPT_ELEMENTS), checked on import and on the way out. */
const KEPT_SHAPES = {
  language: 'code',
  identifier: 'objects',
  derivedFrom: 'texts',
  experimental: 'boolean',
  subjectType: 'texts',
  publisher: 'text',
  contact: 'objects',
  useContext: 'objects',
  jurisdiction: 'objects',
  purpose: 'text',
  copyright: 'text',
  approvalDate: 'date',
  lastReviewDate: 'date',
  effectivePeriod: 'object',
  code: 'objects',
} as const satisfies Record<string, Shape>

/**
 * Questionnaire elements that describe the form and change nothing in how it is filled in: a
 * template keeps them in `meta.fhir` and they come back as they were imported.
 */
export type KeptElement = keyof typeof KEPT_SHAPES
export const KEPT_ELEMENTS = Object.keys(KEPT_SHAPES) as KeptElement[]

const FHIR_TEXT = /^[\r\n\t\u0020-\uFFFF]+$/
const FHIR_CODE = /^[^\s]+( [^\s]+)*$/
const FHIR_DATE = /^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$/
const isPlainObject = (value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0
const SHAPE_CHECKS: Readonly<Record<Shape, [(value: unknown) => boolean, string]>> = {
  text: [(value) => typeof value === 'string' && FHIR_TEXT.test(value), 'a non-empty string'],
  code: [(value) => typeof value === 'string' && FHIR_CODE.test(value), 'a code'],
  boolean: [(value) => typeof value === 'boolean', 'true or false'],
  date: [(value) => typeof value === 'string' && FHIR_DATE.test(value), 'a date (YYYY-MM-DD)'],
  texts: [
    (value) =>
      Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && FHIR_TEXT.test(v)),
    'a non-empty array of strings',
  ],
  objects: [
    (value) => Array.isArray(value) && value.length > 0 && value.every(isPlainObject),
    'a non-empty array of objects',
  ],
  object: [isPlainObject, 'a non-empty object'],
}

/** What is wrong with the JSON shape of a kept element's value, or undefined when it is right. */
export function keptShapeProblem(name: KeptElement, value: unknown): string | undefined {
  const [check, wanted] = SHAPE_CHECKS[KEPT_SHAPES[name]]
  return check(value) ? undefined : `must be ${wanted}`
}

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
