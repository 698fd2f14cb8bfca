import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

/**
 * The rooms of the source tree, lowest first (docs/ARCHITECTURE.md). A module may import its own
 * room and any room of a lower rank; never a room of its own rank or above.
 */
export const LAYERS: ReadonlyArray<{ rank: number; rooms: readonly string[] }> = [
  { rank: 0, rooms: ['lib'] },
  { rank: 1, rooms: ['config.ts'] },
  { rank: 2, rooms: ['schemas'] },
  { rank: 3, rooms: ['domain'] },
  { rank: 4, rooms: ['db'] },
  { rank: 5, rooms: ['http'] },
  { rank: 6, rooms: ['plugins'] },
  { rank: 7, rooms: ['feed', 'render', 'hl7'] },
  // The operators' metrics read the rooms below them as the routes do; so does the FHIR view.
  { rank: 8, rooms: ['routes', 'metrics', 'fhir'] },
  { rank: 9, rooms: ['app.ts'] },
  { rank: 10, rooms: ['start-server.ts', 'index.ts'] },
  // Scripts a ward's IT writes against the public entry point (index.ts); `smoke` runs the example.
  { rank: 11, rooms: ['examples'] },
  { rank: 12, rooms: ['cli'] },
  // The programs: the executable above the tool it runs, and `node dist/server.js` above the server.
  { rank: 13, rooms: ['cli.ts', 'server.ts'] },
]

export function roomOf(file: string): string {
  return file.split('/')[0] as string
}

export function rankOf(room: string): number | undefined {
  return LAYERS.find((layer) => layer.rooms.includes(room))?.rank
}

/** Every source file of the service (not tests, bench or examples), relative to the root. */
export function sourceFiles(root: string): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir))) {
      const path = dir === '' ? name : `${dir}/${name}`
      if (statSync(join(root, path)).isDirectory()) {
        if (rankOf(roomOf(path)) !== undefined) walk(path)
      } else if (/\.ts$/.test(name) && rankOf(roomOf(path)) !== undefined) out.push(path)
    }
  }
  walk('')
  return out.sort()
}

// Every way a module names another to load, each with the specifier as its last group (quoted
// with ', " or a backquote): `import ... from`, `export ... from`, a side-effect `import`,
// `import()`, `require()`, `require.resolve()` and `import.meta.resolve()`, and a function made by
// `createRequire(...)` called at once.
const LOADS = [
  /(?:\bfrom|\bimport)\s*\(?\s*(['"`])(\.\.?\/[^'"`]*)\1/g,
  /\b(?:require|resolve)\s*\(\s*(['"`])(\.\.?\/[^'"`]*)\1/g,
  /\bcreateRequire\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*\(\s*(['"`])(\.\.?\/[^'"`]*)\1/g,
]

/**
 * The relative modules a file loads (static, dynamic, re-exports, `import type`, `require` and
 * `createRequire` alike). A template literal with a `${...}` part names a folder, not a file: it
 * counts as loading something in that folder (`folder/*`), so a climb by a computed name is seen.
 */
export function importsOf(source: string, file: string): string[] {
  const found: { at: number; target: string }[] = []
  for (const pattern of LOADS) {
    for (const match of source.matchAll(pattern)) {
      let specifier = match[2] as string
      const computed = specifier.indexOf('${')
      if (computed !== -1) specifier = `${specifier.slice(0, specifier.lastIndexOf('/', computed) + 1)}*`
      const target = normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts')
      found.push({ at: match.index ?? 0, target })
    }
  }
  return found.sort((a, b) => a.at - b.at).map((load) => load.target)
}

export interface Climb {
  file: string
  imports: string
}

/** Imports that reach a room of the same or a higher rank than the importing file's own room. */
export function climbs(
  root: string,
  files = sourceFiles(root),
  read = (f: string) => readFileSync(join(root, f), 'utf8'),
) {
  const found: Climb[] = []
  for (const file of files) {
    const room = roomOf(file)
    const rank = rankOf(room) as number
    for (const target of importsOf(read(file), file)) {
      const targetRoom = roomOf(relative('.', target))
      if (targetRoom === room) continue
      const targetRank = rankOf(targetRoom)
      if (targetRank === undefined || targetRank >= rank) found.push({ file, imports: target })
    }
  }
  return found
}
