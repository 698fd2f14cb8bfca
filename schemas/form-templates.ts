import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { Id, StringEnum, Text, Timestamp } from './common.js'

/** Size limits of a form template; docs/form-templates.md lists them for users. */
export const FORM_TEMPLATE_LIMITS = {
  template: 200_000,
  description: 10_000,
  items: 500,
  question: 4_000,
  choices: 200,
  choice: 1_000,
  tags: 100,
  tag: 200,
  /** bytes of `meta` and of `config`, each, as JSON text */
  objectBytes: 65_536,
  /** levels of nested objects and arrays in `meta` and in `config`, the object itself included */
  objectDepth: 64,
} as const

export const ITEM_TYPES = [
  'identification',
  'multiplechoice',
  'trueorfalse',
  'checklist',
  'date',
  'time',
  'year',
] as const
export type ItemType = (typeof ITEM_TYPES)[number]

/** Item types whose answers are picked from `choices`, so they need at least one. */
export const CHOICE_ITEM_TYPES: ReadonlySet<ItemType> = new Set(['multiplechoice', 'checklist'])

const L = FORM_TEMPLATE_LIMITS

const itemFields = {
  order: Type.Optional(
    Type.Number({ description: 'the client’s own ordering number; the list order is kept as sent' }),
  ),
  set: Type.Optional(Text(200, { description: 'used for categorizing and nesting' })),
  question: Type.Optional(Text(L.question)),
  required: Type.Optional(Type.Boolean()),
  type: StringEnum(ITEM_TYPES),
  choices: Type.Optional(
    Type.Array(Text(L.choice), {
      maxItems: L.choices,
      description: 'at least one for multiplechoice and checklist; no duplicates',
    }),
  ),
}

/** An item (question) as stored and returned: it always has an id. */
export const FormItem = Type.Object({ id: Type.String(), ...itemFields }, { additionalProperties: false })
export type FormItem = Static<typeof FormItem>

/** An item as clients send it: without an id, the server generates one. */
export const FormItemInput = Type.Object(
  {
    id: Type.Optional(Text(100, { description: 'unique within the template; generated when absent' })),
    ...itemFields,
  },
  { additionalProperties: false },
)
export type FormItemInput = Static<typeof FormItemInput>

// Free-form objects: additionalProperties true also tells the serializer to keep every key.
const FreeObject = (description: string) => Type.Object({}, { additionalProperties: true, description })

export const FormTemplate = Type.Object(
  {
    id: Id,
    createdAt: Timestamp,
    createdBy: Type.String({ description: 'account uid of the creator' }),
    facility: Type.Optional(Type.String()),
    type: Type.String(),
    subtype: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    template: Type.Optional(Type.String({ description: 'print layout (pug or ejs)' })),
    items: Type.Optional(Type.Array(FormItem)),
    tags: Type.Optional(Type.Array(Type.String())),
    meta: Type.Optional(FreeObject('free-form, for apps')),
    config: Type.Optional(FreeObject('free-form, for apps')),
    hiddenAt: Type.Optional(Timestamp),
    hiddenBy: Type.Optional(Type.String({ description: 'account uid' })),
  },
  { additionalProperties: false },
)
export type FormTemplate = Static<typeof FormTemplate>

const content = {
  subtype: Text(200),
  name: Text(500),
  description: Text(L.description),
  template: Text(L.template, { description: 'print layout (pug or ejs)' }),
  items: Type.Array(FormItemInput, { maxItems: L.items, description: 'the questions, in the order shown' }),
  tags: Type.Array(Text(L.tag), {
    maxItems: L.tags,
    uniqueItems: true,
    description: 'e.g. vitals, or restriction::<uid>',
  }),
  meta: FreeObject(`free-form, at most ${L.objectBytes} bytes as JSON`),
  config: FreeObject(`free-form, at most ${L.objectBytes} bytes as JSON`),
}

/** `null` in a patch removes an optional field (as in JSON merge patch). */
function Clearable<T extends TSchema>(schema: T) {
  return Type.Unsafe<Static<T> | null>({ ...schema, nullable: true })
}

export const FormTemplateCreate = Type.Object(
  {
    type: Text(200),
    createdAt: Type.Optional(Timestamp),
    facility: Type.Optional(Text(200, { description: 'only for tokens not bound to a facility' })),
    subtype: Type.Optional(content.subtype),
    name: Type.Optional(content.name),
    description: Type.Optional(content.description),
    template: Type.Optional(content.template),
    items: Type.Optional(content.items),
    tags: Type.Optional(content.tags),
    meta: Type.Optional(content.meta),
    config: Type.Optional(content.config),
  },
  { additionalProperties: false },
)
export type FormTemplateCreate = Static<typeof FormTemplateCreate>

export const FormTemplatePatch = Type.Object(
  {
    type: Type.Optional(Text(200)),
    createdAt: Type.Optional(Timestamp),
    facility: Type.Optional(
      Text(200, { description: 'moves the template; a facility-bound token may only name its own' }),
    ),
    subtype: Type.Optional(Clearable(content.subtype)),
    name: Type.Optional(Clearable(content.name)),
    description: Type.Optional(Clearable(content.description)),
    template: Type.Optional(Clearable(content.template)),
    items: Type.Optional(Clearable(content.items)),
    tags: Type.Optional(Clearable(content.tags)),
    meta: Type.Optional(Clearable(content.meta)),
    config: Type.Optional(Clearable(content.config)),
    hide: Type.Optional(
      Type.Boolean({ description: 'true hides the template (keeps the first hiding), false shows it' }),
    ),
  },
  { additionalProperties: false, description: 'each field named replaces that field; null removes it' },
)
export type FormTemplatePatch = Static<typeof FormTemplatePatch>
