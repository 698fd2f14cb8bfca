import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'

/** The served /openapi.json, written to a fresh temporary directory; answers the directory and the file. */
export async function dumpOpenapi(): Promise<{ dir: string; file: string; document: Record<string, unknown> }> {
  const app = await buildApp(defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent' }))
  try {
    const res = await app.inject('/openapi.json')
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'))
    const file = join(dir, 'openapi.json')
    writeFileSync(file, res.body)
    return { dir, file, document: res.json() }
  } finally {
    await app.close()
  }
}
