import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { OUTSIDE_SCHEMA, settingSchemas, settingsReference } from '../../scripts/docs/settings.js'

const FILE = 'docs/reference/SETTINGS.md'
const committed = () => readFileSync(join(PROJECT_ROOT, FILE), 'utf8')

t.test('every setting of the schema has a description', async (t) => {
  const bare = settingSchemas()
    .filter(([, schema]) => (schema.description ?? '').trim() === '')
    .map(([name]) => name)
  t.same(bare, [], 'settings without a description: add one to their TypeBox schema')
})

t.test('every setting is in the reference, once', async (t) => {
  const text = committed()
  for (const [name] of settingSchemas()) {
    const rows = text.split('\n').filter((line) => line.startsWith(`| \`${name}\` |`))
    t.equal(rows.length, 1, `${name} in ${FILE}`)
  }
})

t.test(`${FILE} is what \`npm run docs\` writes from the schema now`, async (t) => {
  t.equal(committed(), settingsReference(), `${FILE} is stale: run npm run docs`)
})

/** The environment variables a source text reads by name. */
function environmentReads(text: string): string[] {
  const names = new Set<string>()
  const patterns = [
    /\bprocess\.env\??\.([A-Z][A-Z0-9_]*)/g,
    /\bprocess\.env\??\.?\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g,
    /\benv\??\.([A-Z][A-Z0-9_]*)\b/g,
    /\benv\??\.?\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g,
    /\.env\(\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\)/g,
  ]
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) names.add(match[1] as string)
  return [...names]
}

t.test('the scanner finds every way the sources read a variable', async (t) => {
  const sample = [
    'const a = process.env.ONE',
    "const b = process.env['TWO']",
    'const c = env.THREE ?? env?.FOUR',
    "new Option('--x').env('FIVE')",
    'env.find((v) => v)',
  ].join('\n')
  t.same(environmentReads(sample).sort(), ['FIVE', 'FOUR', 'ONE', 'THREE', 'TWO'])
})

const SKIPPED = new Set(['node_modules', 'dist', 'test', 'bench', 'coverage', 'release', 'reports', 'data', 'docs'])

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIPPED.has(entry.name)) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sources(path)
    else if (/\.(?:[cm]?ts|[cm]?js)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path
  }
}

t.test('every variable the code reads is a setting of the schema, or deliberately not', async (t) => {
  const settings = new Set(settingSchemas().map(([name]) => name))
  const stray: string[] = []
  for (const path of sources(PROJECT_ROOT))
    for (const name of environmentReads(readFileSync(path, 'utf8')))
      if (!settings.has(name) && !(name in OUTSIDE_SCHEMA)) stray.push(`${relative(PROJECT_ROOT, path)}: ${name}`)
  t.same(stray, [], 'read outside the config schema: add them to it, or to OUTSIDE_SCHEMA with the reason')
  for (const name of Object.keys(OUTSIDE_SCHEMA))
    t.notOk(settings.has(name), `${name}, outside the schema, is not also a setting`)
})
