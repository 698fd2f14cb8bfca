import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'

/**
 * The manuals for operators and integrators say how the product is now: history (issue numbers,
 * what an older version did) lives in CHANGELOG.md and the commits. Add a manual here when it is
 * written for those readers.
 */
const MANUALS = [
  'README.md',
  'docs/README.md',
  'docs/OPERATIONS.md',
  'docs/METRICS.md',
  'docs/BOARD.md',
  'docs/SCRIPTING.md',
  'docs/reference/SETTINGS.md',
  'docs/reference/CLI.md',
]

const HISTORY: [string, RegExp][] = [
  ['an issue number', /\b(?:issues?|tickets?|bugs?|PRs?|pull requests?) ?#? ?\d+/gi],
  ['an issue reference', /(?<![\w&/]|: ?)#\d+\b(?![a-f])/gi],
  ['what an older version did', /\b(?:since|until|before|as of|in|by) (?:version |v)?\d+\.\d+(?:\.\d+)?\b(?![-.\w])/gi],
  ['versions that came before', /\b\d+\.\d+(?:\.\d+)? (?:and|or) (?:older|earlier|before)\b/gi],
]

/** Each line of `text` that tells history, with what it tells. */
function historyIn(text: string): string[] {
  const found: string[] = []
  for (const [index, line] of text.split('\n').entries())
    for (const [what, pattern] of HISTORY)
      for (const match of line.matchAll(pattern)) found.push(`line ${index + 1}: ${what}: "${match[0]}"`)
  return found
}

t.test('the patterns catch history and leave the present alone', async (t) => {
  t.same(historyIn('see issue 16'), ['line 1: an issue number: "issue 16"'])
  t.equal(historyIn('fixed in #44, and issues #3').length, 3)
  t.equal(historyIn('backups taken by 0.6 and older carry no mark').length, 2)
  t.equal(historyIn('since 0.7 the feed resumes').length, 1)
  t.same(
    historyIn('Litestream 0.3.13; Node 26.1; facility.db.before-0.5.0; the #memory anchor; color: #333; &#8212;'),
    [],
  )
})

for (const file of MANUALS) {
  t.test(`${file} tells no history`, async (t) => {
    t.same(historyIn(readFileSync(join(PROJECT_ROOT, file), 'utf8')), [], `${file}: move it to CHANGELOG.md`)
  })
}
