import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { climbs, importsOf, sourceFiles } from './layers.js'

t.test('no source file imports a room of its own rank or above', async (t) => {
  const files = sourceFiles(PROJECT_ROOT)
  t.ok(files.includes('db/repositories/ward-occupants.ts'), 'the walk finds the repositories')
  t.ok(files.includes('render/sandbox.ts'), 'the walk finds the print sandbox')
  t.ok(files.length > 80, `the walk finds every source file (${files.length})`)
  t.same(climbs(PROJECT_ROOT, files), [])
})

t.test('the check sees a climb when one is added', async (t) => {
  const files = ['db/repositories/beds.ts', 'routes/beds/index.ts', 'feed/hub.ts', 'render/sandbox.ts']
  const sources: Record<string, string> = {
    'db/repositories/beds.ts': "import { x } from '../../routes/beds/index.js'\n",
    'routes/beds/index.ts': "import type { Y } from '../../db/repositories/beds.js'\n",
    'feed/hub.ts': "const r = await import('../render/sandbox.js')\n",
    'render/sandbox.ts': "export { z } from '../lib/lru.js'\n",
  }
  t.same(
    climbs('/nowhere', files, (f) => sources[f] as string),
    [
      { file: 'db/repositories/beds.ts', imports: 'routes/beds/index.ts' },
      { file: 'feed/hub.ts', imports: 'render/sandbox.ts' },
    ],
    'a repository reaching up to a route, and one room of a rank reaching a sibling room',
  )
})

t.test('imports are read in every spelling', async (t) => {
  const source = [
    "import a from './a.js'",
    "import type { B } from '../b/index.js'",
    "export * from './c.js'",
    "const d = await import('./d.js')",
    "import 'node:fs'",
  ].join('\n')
  t.same(importsOf(source, 'db/x.ts'), ['db/a.ts', 'b/index.ts', 'db/c.ts', 'db/d.ts'])
})
