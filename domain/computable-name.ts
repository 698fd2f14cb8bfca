/**
 * A computable name (FHIR's `name` of a canonical resource, invariant que-0 / cnl-0:
 * `[A-Z]([A-Za-z0-9_]){0,254}`) derived from a human title: the title's letters and digits, accents
 * removed, each word capitalized and joined ("Admission intake (2025)" -> "AdmissionIntake2025").
 * A title without a letter to start with gets the prefix "Form". Pure, so the database can search
 * by it with the same function (db/repositories/questionnaires.ts).
 */
export function computableName(title: string): string {
  const words = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word.length > 0)
  const joined = words.map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join('')
  const name = /^[A-Z]/.test(joined) ? joined : `Form${joined}`
  return name.slice(0, 255)
}
