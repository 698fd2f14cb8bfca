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
    'const e = await import(`../routes/e.js`)',
    "const f = require('../plugins/f.js')",
    "const g = createRequire(import.meta.url)('../feed/g.js')",
    "const h = require.resolve('./h.js')",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of a sample module
    'const i = await import(`../render/${name}.js`)',
    "const j = createRequire(import.meta.url).resolve('../cli/j.js')",
    "import './k.js'",
    "const l = require('node:path')",
    "const m = import.meta.resolve('../app.js')",
  ].join('\n')
  t.same(importsOf(source, 'db/x.ts'), [
    'db/a.ts',
    'b/index.ts',
    'db/c.ts',
    'db/d.ts',
    'routes/e.ts',
    'plugins/f.ts',
    'feed/g.ts',
    'db/h.ts',
    'render/*',
    'cli/j.ts',
    'db/k.ts',
    'app.ts',
  ])
})

t.test('a climb by require, createRequire or a template literal is seen like an import', async (t) => {
  const files = ['db/a.ts', 'db/b.ts', 'db/c.ts', 'db/d.ts', 'db/e.ts']
  const sources: Record<string, string> = {
    'db/a.ts': 'const r = await import(`../routes/beds/index.js`)\n',
    'db/b.ts': "const p = require('../plugins/db.js')\n",
    'db/c.ts': "const f = createRequire(import.meta.url)('../feed/hub.js')\n",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of a sample module
    'db/d.ts': 'const s = await import(`../render/${engine}.js`)\n',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of a sample module
    'db/e.ts': "const l = require('../lib/lru.js')\nconst q = await import(`./query/${name}.js`)\n",
  }
  t.same(
    climbs('/nowhere', files, (f) => sources[f] as string),
    [
      { file: 'db/a.ts', imports: 'routes/beds/index.ts' },
      { file: 'db/b.ts', imports: 'plugins/db.ts' },
      { file: 'db/c.ts', imports: 'feed/hub.ts' },
      { file: 'db/d.ts', imports: 'render/*' },
    ],
    'each reaches a higher room; a require of a lower room and a computed name in its own room do not',
  )
})
