import type { FormTemplate, FormTemplateCreate, FormTemplatePatch } from '../schemas/form-templates.js'
import { DEFAULT_TEMPLATE_TYPE, type ImportedTemplate } from './questionnaire-import.js'

// What a Questionnaire POST or PUT asks of the form templates' repository. Pure.

/** `meta.fhir` holds the Questionnaire's descriptive elements; the rest of `meta` is the apps'. */
function metaWith(current: Record<string, unknown> | undefined, template: ImportedTemplate) {
  const { fhir: _previous, ...rest } = current ?? {}
  const meta = template.fhirMeta === undefined ? rest : { ...rest, fhir: template.fhirMeta }
  return Object.keys(meta).length === 0 ? undefined : meta
}

/** The create body of a new template. */
export function createBody(template: ImportedTemplate): FormTemplateCreate {
  const body: FormTemplateCreate = { type: template.type ?? DEFAULT_TEMPLATE_TYPE }
  for (const field of ['subtype', 'name', 'description', 'createdAt'] as const) {
    if (template[field] !== undefined) Object.assign(body, { [field]: template[field] })
  }
  if (template.items.length > 0) body.items = template.items
  const meta = metaWith(undefined, template)
  if (meta !== undefined) body.meta = meta
  return body
}

/**
 * A PUT replaces what a Questionnaire says (title, description, date, status, items, the
 * descriptive elements); the print layout, tags, config and the apps' meta stay, and so do the
 * type and subtype when the Questionnaire does not carry our extensions (a client that does not
 * know them did not mean to change them).
 */
export function replacement(current: FormTemplate, template: ImportedTemplate): FormTemplatePatch {
  const patch: FormTemplatePatch = {
    name: template.name ?? null,
    description: template.description ?? null,
    items: template.items.length > 0 ? template.items : null,
    meta: metaWith(current.meta, template) ?? null,
    hide: template.retired,
  }
  if (template.type !== undefined) patch.type = template.type
  if (template.subtype !== undefined) patch.subtype = template.subtype
  if (template.createdAt !== undefined) patch.createdAt = template.createdAt
  return patch
}
