import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { test } from 'tap'
import { computableName } from '../../domain/computable-name.js'
import {
  DEFAULT_TEMPLATE_TYPE,
  EXTENSION,
  fromQuestionnaire,
  type ImportedTemplate,
  type ImportIssue,
  toQuestionnaire,
} from '../../fhir/questionnaire.js'
import { type FormItem, type FormTemplate, ITEM_TYPES } from '../../schemas/form-templates.js'
import { propertyRuns } from '../property-runs.js'
import { assertValidFhir as assertValidR4 } from './validate.js'

const BASE = 'https://ward.example/fhir'
const sample = (name: string) => JSON.parse(readFileSync(new URL(`samples/${name}`, import.meta.url), 'utf8'))

/** The template the repository would store for an import (id, creator and clock given). */
function recordOf(imported: ImportedTemplate, id = 'aaaaaaaaaaaaaaaaaaaaaaaa', createdAt = 1_700_000_000_000) {
  const record: FormTemplate = {
    id,
    createdAt: imported.createdAt ?? createdAt,
    createdBy: 'nurse-1',
    type: imported.type ?? DEFAULT_TEMPLATE_TYPE,
  }
  if (imported.subtype !== undefined) record.subtype = imported.subtype
  if (imported.name !== undefined) record.name = imported.name
  if (imported.description !== undefined) record.description = imported.description
  if (imported.items.length > 0) record.items = imported.items
  if (imported.fhirMeta !== undefined) record.meta = { fhir: imported.fhirMeta }
  if (imported.retired) Object.assign(record, { hiddenAt: createdAt, hiddenBy: 'nurse-1' })
  return record
}

function imported(resource: unknown): ImportedTemplate {
  const result = fromQuestionnaire(resource)
  if (!result.ok) throw new Error(`refused: ${JSON.stringify(result.issues)}`)
  return result.template
}

function issuesOf(resource: unknown): ImportIssue[] {
  const result = fromQuestionnaire(resource)
  return result.ok ? [] : result.issues
}

const intake: FormTemplate = {
  id: '0123456789abcdef01234567',
  createdAt: Date.UTC(2025, 0, 2, 3, 4, 5, 6),
  createdBy: 'nurse-1',
  type: 'intake',
  subtype: 'adult',
  name: 'Admission intake (2025)',
  description: 'Asked at admission',
  items: [
    { id: 'smoker', question: 'Smoker?', type: 'trueorfalse', required: true, order: 3 },
    { id: 'pain', question: 'Pain level', type: 'multiplechoice', choices: ['none', 'mild'], order: 1, set: 'Pain' },
    { id: 'allergies', question: 'Allergies', type: 'checklist', choices: ['latex', 'none'], order: 2 },
    { id: 'since', question: 'Pain since', type: 'year', order: 1.5, set: 'Pain' },
    { id: 'who', question: 'Who asks', type: 'identification', choices: ['nurse', 'doctor'] },
    { id: 'when', type: 'time', order: 0 },
  ],
  template: 'h1= name',
  meta: { author: 'dr-1' },
}

test('a form template is an R4 Questionnaire: fields, types, choices, groups from set, in order', async (t) => {
  const q = toQuestionnaire(
    { record: intake, version: 3, lastUpdated: Date.UTC(2025, 5, 1) },
    { canonicalBase: `${BASE}/` },
  )
  assertValidR4(t, q)
  t.match(q, {
    resourceType: 'Questionnaire',
    id: intake.id,
    meta: { versionId: '3', lastUpdated: '2025-06-01T00:00:00.000Z' },
    url: `${BASE}/Questionnaire/${intake.id}`,
    version: '3',
    name: 'AdmissionIntake2025',
    title: 'Admission intake (2025)',
    status: 'active',
    date: '2025-01-02T03:04:05.006Z',
    description: 'Asked at admission',
    extension: [
      { url: EXTENSION.type, valueString: 'intake' },
      { url: EXTENSION.subtype, valueString: 'adult' },
    ],
  })
  t.same(q.item, [
    { linkId: 'when', type: 'time' },
    {
      linkId: 'set:Pain',
      text: 'Pain',
      type: 'group',
      item: [
        {
          linkId: 'pain',
          type: 'choice',
          text: 'Pain level',
          answerOption: [{ valueString: 'none' }, { valueString: 'mild' }],
        },
        {
          linkId: 'since',
          type: 'integer',
          text: 'Pain since',
          extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/entryFormat', valueString: 'YYYY' }],
        },
      ],
    },
    {
      linkId: 'allergies',
      type: 'choice',
      text: 'Allergies',
      repeats: true,
      answerOption: [{ valueString: 'latex' }, { valueString: 'none' }],
    },
    { linkId: 'smoker', type: 'boolean', text: 'Smoker?', required: true },
    {
      linkId: 'who',
      type: 'string',
      text: 'Who asks',
      extension: [
        { url: EXTENSION.choice, valueString: 'nurse' },
        { url: EXTENSION.choice, valueString: 'doctor' },
      ],
    },
  ])
  const hidden = toQuestionnaire(
    { record: { ...intake, hiddenAt: 1, hiddenBy: 'x' }, version: 4, lastUpdated: 2 },
    { canonicalBase: BASE },
  )
  t.equal(hidden.status, 'retired')
})

test('texts with control characters or only whitespace, which a template may hold and FHIR may not, are answered with U+FFFD', async (t) => {
  const record: FormTemplate = {
    id: 'cccccccccccccccccccccccc',
    createdAt: 0,
    createdBy: 'x',
    type: 'a\u0001b',
    name: 'bell\u0007',
    description: ' \n ',
    items: [
      { id: 'q\u0000', type: 'multiplechoice', question: 'tab\tok', choices: ['x\u001f'] },
      { id: 'q\u0001', type: 'date' },
    ],
  }
  const q = toQuestionnaire({ record, version: 1, lastUpdated: 0 }, { canonicalBase: BASE })
  assertValidR4(t, q)
  t.match(q, {
    title: 'bell\ufffd',
    description: '\ufffd',
    extension: [{ valueString: 'a\ufffdb' }],
    item: [
      { linkId: 'q\ufffd', text: 'tab\tok', answerOption: [{ valueString: 'x\ufffd' }] },
      { linkId: 'q\ufffd~', type: 'date' },
    ],
  })
  const back = fromQuestionnaire(q)
  t.ok(back.ok, 'its linkIds stay unique, so it imports')
})

test('the descriptive elements must have their FHIR shape: on import a 422, on the way out left out', async (t) => {
  const expressions = issuesOf(
    minimal([q('a')], { copyright: 5, code: 'x', experimental: 'yes', approvalDate: '2020-13', language: 'en US ' }),
  ).map((issue) => issue.expression)
  t.same(expressions.sort(), [
    'Questionnaire.approvalDate',
    'Questionnaire.code',
    'Questionnaire.copyright',
    'Questionnaire.experimental',
    'Questionnaire.language',
  ])
  // A REST client may write anything into meta.fhir.
  const record: FormTemplate = {
    id: 'dddddddddddddddddddddddd',
    createdAt: 0,
    createdBy: 'x',
    type: 'intake',
    meta: { fhir: { copyright: 5, code: [], publisher: 'Ward 3', subjectType: ['Patient'] } },
  }
  const exported = toQuestionnaire({ record, version: 1, lastUpdated: 0 }, { canonicalBase: BASE })
  assertValidR4(t, exported)
  t.equal(exported.copyright, undefined)
  t.equal(exported.code, undefined)
  t.match(exported, { publisher: 'Ward 3', subjectType: ['Patient'] })
})

test('computable names follow que-0 whatever the title', async (t) => {
  t.equal(computableName('PHQ-9 quick depression'), 'PHQ9QuickDepression')
  t.equal(computableName('Fièvre à l’admission'), 'FievreALAdmission')
  t.equal(computableName('2025 intake'), 'Form2025Intake')
  t.equal(computableName('日本語'), 'Form')
  t.match(computableName('x'.repeat(400)), /^[A-Z][A-Za-z0-9_]{0,254}$/)
})

test('the FHIR R4 example f201 (Lifelines) imports, and export -> import -> export is stable', async (t) => {
  const template = imported(sample('f201-lifelines.json'))
  t.equal(template.type, undefined, 'no type of ours: a new template is a questionnaire')
  t.match(template, {
    createdAt: Date.UTC(2010, 0, 1),
    retired: false,
    fhirMeta: { subjectType: ['Patient'], code: [{ code: 'VL 1-1, 18-65_1.2.2' }] },
  })
  t.same(
    template.items.map((item) => [item.id, item.type, item.set]),
    [
      ['1', 'trueorfalse', undefined],
      ['2.1', 'identification', 'General questions'],
      ['2.2', 'date', 'General questions'],
      ['2.3', 'identification', 'General questions'],
      ['2.4', 'identification', 'General questions'],
      ['3.1', 'trueorfalse', 'Intoxications'],
      ['3.2', 'trueorfalse', 'Intoxications'],
    ],
  )
  const first = toQuestionnaire({ record: recordOf(template), version: 1, lastUpdated: 5 }, { canonicalBase: BASE })
  assertValidR4(t, first, 'f201 as exported')
  t.same(first.code, sample('f201-lifelines.json').code, 'the descriptive elements come back')
  const second = toQuestionnaire(
    { record: recordOf(imported(first)), version: 1, lastUpdated: 5 },
    { canonicalBase: BASE },
  )
  t.same(second, first)
})

test('the SDC PHQ-9 is refused part by part, naming each path', async (t) => {
  const expressions = issuesOf(sample('sdc-phq9.json')).map((issue) => issue.expression)
  for (const path of [
    'Questionnaire.contained',
    'Questionnaire.extension[0]',
    'Questionnaire.status',
    'Questionnaire.item[0].item[0].answerValueSet',
    'Questionnaire.item[0].item[8].answerValueSet',
    'Questionnaire.item[0].item[9].extension[0]',
    'Questionnaire.item[0].item[9].code',
    'Questionnaire.item[0].item[9].type',
  ]) {
    t.ok(expressions.includes(path), path)
  }
})

test("LHC-Forms' PHQ-9 is refused: its extensions, item codes and coded answers have no place in a template", async (t) => {
  const issues = issuesOf(sample('lforms-phq9.json'))
  const expressions = issues.map((issue) => issue.expression)
  for (const path of [
    'Questionnaire.status',
    'Questionnaire.item[0].extension[0]',
    'Questionnaire.item[0].code',
    'Questionnaire.item[0].answerOption[0].extension',
    'Questionnaire.item[0].answerOption[0].valueCoding',
  ]) {
    t.ok(expressions.includes(path), path)
  }
  t.ok(issues.every((issue) => issue.diagnostics.length > 0))
})

const minimal = (item: unknown[], extra: Record<string, unknown> = {}) => ({
  resourceType: 'Questionnaire',
  status: 'active',
  item,
  ...extra,
})
const q = (linkId: string, type = 'string', extra: Record<string, unknown> = {}) => ({ linkId, type, ...extra })

test('each part a form template cannot hold is an issue at its path; what it ignores is listed', async (t) => {
  const cases: [string, unknown, string][] = [
    [
      'enableWhen',
      minimal([
        q('a', 'boolean'),
        q('b'),
        q('c', 'string', { enableWhen: [{ question: 'a', operator: 'exists', answerBoolean: true }] }),
      ]),
      'Questionnaire.item[2].enableWhen',
    ],
    [
      'nested group',
      minimal([{ linkId: 'g', type: 'group', text: 'G', item: [{ linkId: 'h', type: 'group', item: [q('x')] }] }]),
      'Questionnaire.item[0].item[0]',
    ],
    ['a question with sub-items', minimal([q('a', 'string', { item: [q('b')] })]), 'Questionnaire.item[0].item'],
    [
      'answerValueSet',
      minimal([q('a', 'choice', { answerValueSet: 'http://x/vs' })]),
      'Questionnaire.item[0].answerValueSet',
    ],
    [
      'calculated expression',
      minimal([
        q('a', 'string', {
          extension: [
            {
              url: 'http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-calculatedExpression',
              valueExpression: { language: 'text/fhirpath', expression: '1' },
            },
          ],
        }),
      ]),
      'Questionnaire.item[0].extension[0]',
    ],
    ['repeats on a text', minimal([q('a', 'string', { repeats: true })]), 'Questionnaire.item[0].repeats'],
    ['a display item', minimal([q('a', 'display')]), 'Questionnaire.item[0].type'],
    ['an integer that is no year', minimal([q('a', 'integer')]), 'Questionnaire.item[0].type'],
    ['initial', minimal([q('a', 'string', { initial: [{ valueString: 'x' }] })]), 'Questionnaire.item[0].initial'],
    [
      'a coded answer',
      minimal([q('a', 'choice', { answerOption: [{ valueCoding: { code: 'x' } }] })]),
      'Questionnaire.item[0].answerOption[0].valueCoding',
    ],
    ['a choice without answers', minimal([q('a', 'choice')]), 'Questionnaire.item[0].answerOption'],
    ['a repeated linkId', minimal([q('a'), q('a')]), 'Questionnaire.item[1].linkId'],
    ['status draft', minimal([q('a')], { status: 'draft' }), 'Questionnaire.status'],
    [
      'a modifier extension',
      minimal([q('a')], { modifierExtension: [{ url: 'x', valueBoolean: true }] }),
      'Questionnaire.modifierExtension',
    ],
    [
      'a foreign extension',
      minimal([q('a')], { extension: [{ url: 'http://x', valueString: 'y' }] }),
      'Questionnaire.extension[0]',
    ],
    ['an extension on a primitive', minimal([q('a')], { _title: { extension: [] } }), 'Questionnaire.title'],
    ['a security label', minimal([q('a')], { meta: { security: [{ code: 'R' }] } }), 'Questionnaire.meta.security'],
    ['a date before 1970', minimal([q('a')], { date: '1960-03-13' }), 'Questionnaire.date'],
    ['a too long linkId', minimal([q('x'.repeat(101))]), 'Questionnaire.item[0].linkId'],
    ['not a Questionnaire', { resourceType: 'Patient' }, 'Questionnaire'],
  ]
  for (const [what, resource, path] of cases) {
    const expressions = issuesOf(resource).map((issue) => issue.expression)
    t.ok(expressions.includes(path), `${what}: ${path} in ${JSON.stringify(expressions)}`)
  }
  const ignored = imported(
    minimal([q('a')], {
      id: 'x',
      meta: { versionId: '9', profile: ['http://p'] },
      text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">x</div>' },
      url: 'http://elsewhere/Questionnaire/x',
      version: '2.0',
      name: 'Other',
      copyright: 'free',
    }),
  )
  t.same(ignored.fhirMeta, { copyright: 'free' }, 'meta, text, url, version, name are ignored; copyright is kept')
})

const text = (max: number) =>
  fc.string({ minLength: 1, maxLength: max, unit: 'grapheme-ascii' }).filter((s) => s.trim() === s && s.length > 0)
/** Any text a template may hold, control characters too (a FHIR string cannot: they come back as U+FFFD). */
const anyText = (max: number) => fc.string({ minLength: 1, maxLength: max, unit: 'binary' })
const choicesOf = fc.uniqueArray(text(12), { minLength: 1, maxLength: 4 })
const itemOf = (id: string) =>
  fc
    .record(
      {
        type: fc.constantFrom(...ITEM_TYPES),
        question: anyText(30),
        required: fc.boolean(),
        order: fc.integer({ min: -5, max: 5 }),
        set: fc.constantFrom('Vitals', 'Pain', 'set:b'),
        choices: choicesOf,
      },
      { requiredKeys: ['type'] },
    )
    .map((item) => {
      const out = { id, ...item } as FormItem
      if ((item.type === 'multiplechoice' || item.type === 'checklist') && !item.choices) out.choices = ['yes']
      return out
    })
const templateOf = fc
  .uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'set:Vitals', 'set:Pain'), { maxLength: 6 })
  .chain((ids) => fc.tuple(...ids.map(itemOf)))
  .chain((items) =>
    fc
      .record(
        {
          name: anyText(40),
          subtype: anyText(10),
          description: anyText(40),
          hidden: fc.boolean(),
          fhir: fc.record({ publisher: text(10), experimental: fc.boolean() }),
        },
        { requiredKeys: [] },
      )
      .map(({ hidden, fhir, ...fields }) => {
        const record: FormTemplate = {
          id: 'bbbbbbbbbbbbbbbbbbbbbbbb',
          createdAt: 1_600_000_000_123,
          createdBy: 'n',
          type: 'intake',
          ...fields,
        }
        if (items.length > 0) record.items = items as FormItem[]
        if (hidden) Object.assign(record, { hiddenAt: 1, hiddenBy: 'n' })
        if (fhir) record.meta = { fhir, other: 1 }
        return record
      }),
  )

test('export -> import -> export is stable for drawn templates, and every export is valid R4', async (t) => {
  let validated = 0
  fc.assert(
    fc.property(templateOf, (record) => {
      const first = toQuestionnaire({ record, version: 2, lastUpdated: 7 }, { canonicalBase: BASE })
      const back = fromQuestionnaire(first)
      if (!back.ok) throw new Error(JSON.stringify(back.issues))
      const second = toQuestionnaire(
        { record: recordOf(back.template, record.id), version: 2, lastUpdated: 7 },
        { canonicalBase: BASE },
      )
      if (JSON.stringify(second) !== JSON.stringify(first))
        throw new Error(`${JSON.stringify(first)}\n!=\n${JSON.stringify(second)}`)
      // The validator is slow: every tenth drawn export.
      if (validated++ % 10 === 0) assertValidR4(t, first, 'a drawn export')
    }),
    { numRuns: propertyRuns(200) },
  )
})
