import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'

/**
 * docs/OPERATIONS.md, "What the log says", lists every warning and error the service logs: each log
 * call at warn or error level in the sources must have its text there (the longest literal part of
 * its message: what an operator greps for).
 */
const MANUAL = 'docs/OPERATIONS.md'
const SECTION = '## What the log says'

/** Log calls whose text is not written at the call, and where their texts are documented instead. */
const BUILT_ELSEWHERE: Record<string, string> = {
  'hl7/refusals.ts': 'the refusals, MESSAGES in the same file: checked below',
  'plugins/db.ts ":"': 'the storage faults (FAULT_MESSAGES): the table "When the database cannot be written"',
  'db/replication/supervisor.ts "${line.error ?"': "Litestream's own lines, `litestream: …`",
}

const SKIPPED = new Set(['node_modules', 'dist', 'test', 'bench', 'scripts', 'docs', 'public', 'examples'])

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || SKIPPED.has(entry.name)) continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* sources(path)
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path
  }
}

/** What an operator would grep for in each warn or error line of a source text; null: not a literal. */
function loggedTexts(text: string): (string | null)[] {
  const texts: (string | null)[] = []
  const calls = /\b(?:log|logger)\.(?:warn|error)\(|\blog\(\s*(?:'warn'|'error'|repeated \? 'debug' : 'error')/g
  for (const call of text.matchAll(calls)) {
    const after = text.slice((call.index ?? 0) + call[0].length, (call.index ?? 0) + call[0].length + 600)
    const literal = /(['"`])((?:\\.|(?!\1)[^\\])*)\1/.exec(after)
    if (!literal) {
      texts.push(null)
      continue
    }
    const parts = (literal[2] as string).split(/\$\{(?:[^{}]|\{[^}]*\})*\}/).map((part) => part.trim())
    texts.push(parts.sort((a, b) => b.length - a.length)[0] ?? '')
  }
  return texts
}

const manual = readFileSync(join(PROJECT_ROOT, MANUAL), 'utf8')
const section = manual.slice(manual.indexOf(SECTION))

t.test('the scanner finds warn and error lines, and their texts', async (t) => {
  const slot = (name: string) => `$\{${name}}`
  const sample = [
    `fastify.log.warn({ file }, \`${slot('file')} is locked by another process: writes wait\`)`,
    "this.opts.log.error(\n  { err },\n  'HL7: an answer could not be sent',\n)",
    `log('error', \`litestream ended (${slot('how')}); starting it again in ${slot('ms')} ms\`)`,
    'log.info("not this one")',
    'this.log.warn({ remote }, MESSAGES[reason])',
  ].join('\n')
  t.same(loggedTexts(sample), [
    'is locked by another process: writes wait',
    'HL7: an answer could not be sent',
    '); starting it again in',
    null,
  ])
})

t.test(`every warning and error the service logs is in ${MANUAL}, "What the log says"`, async (t) => {
  t.ok(section.length > 1000, 'the section is there')
  const missing: string[] = []
  for (const path of sources(PROJECT_ROOT)) {
    const file = relative(PROJECT_ROOT, path)
    for (const text of loggedTexts(readFileSync(path, 'utf8'))) {
      if (text === null) {
        if (!(file in BUILT_ELSEWHERE)) missing.push(`${file}: a message not written at the call`)
      } else if (text.length < 12 || !section.includes(text)) {
        if (!(`${file} ${JSON.stringify(text)}` in BUILT_ELSEWHERE)) missing.push(`${file}: ${JSON.stringify(text)}`)
      }
    }
  }
  t.same(missing, [], `add these to ${MANUAL}, "What the log says", with what to do`)
})

t.test('the ADT refusals and the storage faults are there too', async (t) => {
  const refusals = readFileSync(join(PROJECT_ROOT, 'hl7/refusals.ts'), 'utf8')
  const texts = [...refusals.matchAll(/^\s+\w+: '(HL7: [^']+)',$/gm)].map((match) => match[1] as string)
  t.equal(texts.length, 4, 'the four refusals')
  for (const text of texts) t.ok(section.includes(text), text)
  for (const code of ['STORAGE_FULL', 'STORAGE_READ_ONLY', 'STORAGE_IO_ERROR', 'STORAGE_CORRUPT', 'DATABASE_BUSY'])
    t.ok(section.includes(code), code)
})
