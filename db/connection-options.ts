import type { Options } from 'better-sqlite3'
import { insideExecutable, sqliteAddon } from '../lib/executable.js'

/**
 * better-sqlite3's options; inside the single executable, with the SQLite addon it carries
 * (verified, lib/executable.ts), as there is no node_modules to find one in. better-sqlite3 takes
 * an addon object there (lib/binding.js), although its types name only a path.
 */
export function sqliteOptions(options: Options = {}): Options {
  if (!insideExecutable()) return options
  return { ...options, nativeBinding: sqliteAddon() as unknown as string }
}
