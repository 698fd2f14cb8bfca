import type { JsonObject } from './questionnaire-model.js'

// How the import of a Questionnaire names what it refuses: one issue per part, at its path.

export interface ImportIssue {
  expression: string
  diagnostics: string
}

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

export class Collector {
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

export function text(issues: Collector, path: string, value: unknown, max: number): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.length === 0) {
    issues.add(path, 'must be a non-empty string')
    return undefined
  }
  if (value.length > max) issues.add(path, `is ${value.length} characters long, a form template holds at most ${max}`)
  return value
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function listOf(issues: Collector, path: string, value: unknown): unknown[] {
  if (value === undefined) return []
  if (Array.isArray(value)) return value
  issues.add(path, 'must be an array')
  return []
}
