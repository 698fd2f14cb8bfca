import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ConfigSchema } from '../../config.js'
import { PROJECT_ROOT } from '../../lib/product-files.js'

/**
 * The developer's and integrator's manuals speak about the product as it is: no issue numbers, no
 * versions it used to be, no "before the fix". History lives in CHANGELOG.md and the commits.
 * docs/DECISIONS.md may name versions (a decision's context can need one) but no issue numbers.
 */
const ISSUE = { name: 'an issue number', pattern: /\bissues?\s+#?\d+|(?<![\w&/])#\d+\b/i }
const HISTORY = [
  ISSUE,
  { name: 'a version of the product', pattern: /(?<![\d.])0\.\d+\.(?:\d+|x)(?!\.\d)/ },
  { name: 'a dated measurement', pattern: /\b20\d\d-[01]\d-[0-3]\d\b(?!T)/ },
  {
    name: 'a look back',
    pattern:
      /\b(?:earlier|older|previous) versions?\b|\b(?:it|this|that|which|value|version|row|test|code) used to\b|\bas before\b|\bbefore the fix\b|\bthe (?:old|former) (?:version|test|code|check|property|rule)\b|\bthe code before\b|\b(?:a|the) review(?:er)?\b/i,
  },
]

const MANUALS: Record<string, readonly { name: string; pattern: RegExp }[]> = {
  'docs/API.md': HISTORY,
  'docs/EVENTS.md': HISTORY,
  'docs/ADT.md': HISTORY,
  'docs/RENDERING.md': HISTORY,
  'docs/form-templates.md': HISTORY,
  'docs/notifications.md': HISTORY,
  'docs/SECURITY.md': HISTORY,
  'docs/TESTING.md': HISTORY,
  'docs/ARCHITECTURE.md': HISTORY,
  'docs/FHIR.md': HISTORY,
  'docs/SIGN-IN.md': HISTORY,
  // The bench writes the date of the run its latest figures come from.
  'docs/PERFORMANCE.md': HISTORY.filter((rule) => rule.name !== 'a dated measurement'),
  'docs/DECISIONS.md': [ISSUE],
}

function offences(text: string, rules: readonly { name: string; pattern: RegExp }[]): string[] {
  const found: string[] = []
  text.split('\n').forEach((line, index) => {
    for (const rule of rules) {
      const match = rule.pattern.exec(line)
      if (match) found.push(`line ${index + 1}: ${rule.name} ("${match[0]}")`)
    }
  })
  return found
}

t.test('the developer and integrator manuals tell no history', async (t) => {
  for (const [file, rules] of Object.entries(MANUALS)) {
    t.same(offences(readFileSync(join(PROJECT_ROOT, file), 'utf8'), rules), [], file)
  }
})

t.test('each setting these manuals link to is a setting the server reads', async (t) => {
  const settings = new Set(Object.keys(ConfigSchema.properties).map((name) => name.toLowerCase()))
  for (const file of Object.keys(MANUALS)) {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8')
    const anchors = [...text.matchAll(/SETTINGS\.md#([\w-]+)/g)].map((match) => match[1] as string)
    t.same(
      anchors.filter((anchor) => !settings.has(anchor)),
      [],
      `${file}: reference/SETTINGS.md#<setting name in lower case>`,
    )
  }
})

t.test('the rules catch history and leave the product alone', async (t) => {
  const caught = [
    'fixed in issue 29',
    'see issue #31',
    'a global cap (#47) was',
    'as in 0.6.1',
    'by 0.7.x and earlier',
    'measured on 2026-11-28',
    'an earlier version blocked the address',
    'the old test passed',
    'it used to answer 500',
    'a larger value used to make every render fail',
    'a review found two keys',
  ]
  for (const text of caught) t.not(offences(text, HISTORY).length, 0, text)
  const kept = [
    'MSH-12 `2.3` to `2.8.x`, such as `2.5.1`',
    'a list that lets every address in, `0.0.0.0/0`',
    '`bed B-7 is closed (since 2026-12-06T08:00:00.000Z)`',
    '[Moves](#moves-between-facilities) and [the port](SETTINGS.md#hl7_port)',
    'revoking the old one',
    'Bed B-12 no longer expected',
    'the key used to discharge X',
    '0.1 µs per notification',
  ]
  for (const text of kept) t.same(offences(text, HISTORY), [], text)
  t.same(offences('a decision of 0.6.0', [ISSUE]), [], 'DECISIONS.md may name versions')
})
