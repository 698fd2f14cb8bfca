import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'
import { isSupportedNode, supportedNodeRange } from '../lib/supported-node.js'

// An unsupported Node to start the built programs with: the machine's own (Node 20 where this
// suite was written), or UNSUPPORTED_NODE. The programs are the built ones (`npm run build`, which
// `npm ci` runs), as a unit file or `npm start` runs them.
const UNSUPPORTED_NODE = process.env.UNSUPPORTED_NODE ?? '/usr/bin/node'

t.test("the supported Node versions are package.json's engines", async (t) => {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
  t.equal(supportedNodeRange(), pkg.engines.node)
})

t.test('which versions are supported', async (t) => {
  for (const version of ['22.18.0', '22.20.1', '24.2.0', '24.11.0', '26.0.0', '26.10.3'])
    t.ok(isSupportedNode(version), `${version} is supported`)
  for (const version of ['20.20.2', '22.17.1', '23.11.0', '24.1.9', '25.0.0', '27.0.0', '18.20.8'])
    t.notOk(isSupportedNode(version), `${version} is not`)
  t.ok(isSupportedNode(process.versions.node), 'nor is the Node running this test refused')
})

function nodeVersion(node: string): string | undefined {
  if (!existsSync(node)) return undefined
  return spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim()
}

async function run(node: string, args: string[]) {
  const child = spawn(node, args, {
    cwd: PROJECT_ROOT,
    env: { ...process.env, PORT: '0', DATABASE_PATH: ':memory:' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null]
  return { code, signal, stdout, stderr }
}

const unsupported = nodeVersion(UNSUPPORTED_NODE)
const noUnsupportedNode =
  unsupported === undefined || unsupported === '' || isSupportedNode(unsupported)
    ? `no unsupported Node at ${UNSUPPORTED_NODE} (${unsupported || 'missing'}); set UNSUPPORTED_NODE to one`
    : false

t.test(
  'on an unsupported Node the server and the CLI stop with one clear line, not a crash',
  { skip: noUnsupportedNode },
  async (t) => {
    const version = unsupported as string
    t.ok(existsSync(join(PROJECT_ROOT, 'dist/lib/supported-node.js')), 'the build is there (npm run build)')
    const programs: Array<[string, string[]]> = [
      ['node dist/server.js', ['dist/server.js']],
      ['node dist/cli.js token list', ['dist/cli.js', '--database', ':memory:', 'token', 'list']],
      ['node dist/cli.js --help', ['dist/cli.js', '--help']],
    ]
    for (const [label, args] of programs) {
      const result = await run(UNSUPPORTED_NODE, args)
      t.equal(result.signal, null, `${label}: no crash (no signal)`)
      t.equal(result.code, 1, `${label}: exit code 1`)
      t.equal(result.stdout, '', `${label}: nothing on stdout`)
      t.equal(
        result.stderr,
        `facility-service: Node ${version} is not supported; run it with Node ${supportedNodeRange()} (package.json "engines")\n`,
        `${label}: one line naming this Node and the supported ones`,
      )
    }
  },
)

t.test('on a supported Node the built programs start as before', async (t) => {
  const result = await run(process.execPath, ['dist/cli.js', '--database', ':memory:', 'token', 'list'])
  t.equal(result.code, 0, result.stderr)
  t.equal(result.signal, null)
})
