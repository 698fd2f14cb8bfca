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
  { rank: 8, rooms: ['routes'] },
  { rank: 9, rooms: ['app.ts'] },
  { rank: 10, rooms: ['server.ts', 'index.ts'] },
  // Scripts a ward's IT writes against the public entry point (index.ts); `smoke` runs the example.
  { rank: 11, rooms: ['examples'] },
  { rank: 12, rooms: ['cli'] },
  // The executable above the tool it runs, as server.ts runs app.ts.
  { rank: 13, rooms: ['cli.ts'] },
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

/** The relative modules a file imports (static, dynamic, re-exports and `import type` alike). */
export function importsOf(source: string, file: string): string[] {
  const found: string[] = []
  for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.\.?\/[^'"]+)['"]/g)) {
    const target = normalize(join(dirname(file), match[1] as string)).replace(/\.js$/, '.ts')
    found.push(target)
  }
  return found
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
