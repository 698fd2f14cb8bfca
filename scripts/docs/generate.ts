import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { cliReference } from './cli.js'
import { settingsReference } from './settings.js'

/** `npm run docs`: writes the references generated from the code (docs/reference/). */
export const GENERATED: Readonly<Record<string, () => string>> = {
  'docs/reference/SETTINGS.md': settingsReference,
  'docs/reference/CLI.md': cliReference,
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const [path, make] of Object.entries(GENERATED)) {
    writeFileSync(join(PROJECT_ROOT, path), make())
    console.log(`wrote ${path}`)
  }
}
