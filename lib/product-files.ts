/**
 * The product's own files (package.json, schema.sql, the board's page, the example smoke test, the
 * OpenAPI page's static files): in the project folder when the sources or dist/ run, from the
 * executable's assets inside the single executable (lib/executable.ts).
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { assetText, extractedProductFiles, insideExecutable, productFileAsset } from './executable.js'

function projectFolder(): string {
  const parent = fileURLToPath(new URL('..', import.meta.url))
  // lib/.. is the project for the sources; dist/lib/.. is dist/, one more up for the compiled files.
  return existsSync(join(parent, 'package.json')) ? parent : join(parent, '..')
}

/**
 * The project folder (where package.json and schema.sql are), both when running the TypeScript
 * sources and the compiled files in dist/. Inside the executable, whose bundle has no folder of its
 * own, the executable's folder: nothing of the product is read from there.
 */
export const PROJECT_ROOT: string = insideExecutable() ? dirname(process.execPath) : projectFolder()

/** The text of one of the product's files, by its path in the project (`schema.sql`). */
export function productText(path: string): string {
  return insideExecutable() ? assetText(productFileAsset(path)) : readFileSync(join(PROJECT_ROOT, path), 'utf8')
}

/**
 * A path on disk to one of the product's files or folders (`public/board`), for what reads files
 * itself. Inside the executable: their copy in the private cache, written on first use.
 */
export function productPath(path: string): string {
  return join(insideExecutable() ? extractedProductFiles() : PROJECT_ROOT, path)
}

let version: string | undefined

/** The version in package.json: the service's, shown by `--version`, /openapi.json and the pre-migration copy's name. */
export function productVersion(): string {
  version ??= (JSON.parse(productText('package.json')) as { version: string }).version
  return version
}
