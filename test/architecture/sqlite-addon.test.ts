import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { sourceFiles } from './layers.js'

/**
 * Every connection the service opens, in every module, with `sqliteOptions(...)`: inside the
 * single executable that is what hands better-sqlite3 the addon the executable carries. A
 * connection opened without it finds no addon there ("Cannot find module …better_sqlite3.node"),
 * which is how `restore` once failed only in the release. The release test runs each command
 * from the executable; this check names the line before a release is even built.
 */
/** The text of a call's arguments: from `start` (just after its `(`) to the parenthesis that closes it. */
function argumentsOf(source: string, start: number): string {
  let depth = 1
  for (let i = start; i < source.length; i++) {
    if (source[i] === '(') depth++
    else if (source[i] === ')' && --depth === 0) return source.slice(start, i)
  }
  return source.slice(start)
}

export function connectionsWithoutAddon(files: string[], read: (file: string) => string): string[] {
  const found: string[] = []
  for (const file of files) {
    const source = read(file)
    for (const match of source.matchAll(/new\s+BetterSqlite3\s*\(/g)) {
      const args = argumentsOf(source, (match.index ?? 0) + match[0].length)
      if (!/sqliteOptions\(/.test(args)) {
        const line = source.slice(0, match.index).split('\n').length
        found.push(`${file}:${line}`)
      }
    }
  }
  return found
}

t.test('every SQLite connection of the service gets the addon the way the server does', async (t) => {
  const files = sourceFiles(PROJECT_ROOT)
  t.ok(files.includes('db/restore.ts') && files.includes('cli/commands/smoke.ts'), 'the walk finds them')
  t.same(
    connectionsWithoutAddon(files, (file) => readFileSync(join(PROJECT_ROOT, file), 'utf8')),
    [],
  )
})

t.test('the check sees a connection opened without the addon', async (t) => {
  const sources: Record<string, string> = {
    'db/a.ts': 'const db = new BetterSqlite3(file, sqliteOptions({ readonly: true }))\n',
    'db/b.ts': 'const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true })\n',
    'db/c.ts': 'const db = new BetterSqlite3(path)\n',
  }
  t.same(
    connectionsWithoutAddon(Object.keys(sources), (file) => sources[file] as string),
    ['db/b.ts:1', 'db/c.ts:1'],
  )
})
