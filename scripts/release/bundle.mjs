// The single executable's code: three ES module bundles made by esbuild from the TypeScript sources
// (cli.ts, the executable's entry; the worker threads' entries), with the production dependencies of
// package-lock.json inside. The code knows when it runs in the executable (lib/executable.ts); the
// bundler only sets what a bundle lacks (see `banner` and `define`) and puts the literal-only
// constant folding in place of constantinople (constantinople.cjs).
import { readFileSync, realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, relative, sep } from 'node:path'

// The worker threads' entries, by the name lib/worker-boot.ts asks for.
const WORKER_ENTRIES = {
  'render-worker': 'render/render-worker.ts',
  'compile-worker': 'render/compile-worker.ts',
  'checkpoint-worker': 'db/checkpoint-worker.ts',
}
export const WORKERS = Object.keys(WORKER_ENTRIES)

// CommonJS dependencies in an ES module bundle still call require() for Node's own modules, and a
// few read __dirname or __filename: they get the executable's. Their require() loads built-in
// modules only: a module from a disk (a node_modules folder on the machine, NODE_PATH) is never
// loaded, even by a dependency's optional require (debug's of supports-color: it catches the error).
// import.meta.url would be the same for every module of a bundle, which is no module's own
// location: it is the executable's file URL with the fragment #bundle, a file: URL for the
// dependencies that need one (QuickJS's loader reads it), and never equal to the program's own
// URL (examples/smoke-test.mjs compares them to know it was run as a script).
const BANNER = [
  "import { createRequire as __createRequire, isBuiltin as __isBuiltin } from 'node:module';",
  "import { pathToFileURL as __pathToFileURL } from 'node:url';",
  'const __builtinRequire = __createRequire(process.execPath);',
  'function __builtinOnly(id) {',
  '  if (__isBuiltin(id)) return id;',
  '  const error = new Error("Cannot find module \'" + id + "\': the executable loads only the modules it carries");',
  "  error.code = 'MODULE_NOT_FOUND';",
  '  throw error;',
  '}',
  'const require = Object.assign((id) => __builtinRequire(__builtinOnly(id)), { resolve: __builtinOnly, cache: {} });',
  'const __filename = process.execPath;',
  "const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
  "const __bundleUrl = __pathToFileURL(process.execPath).href + '#bundle';",
].join('\n')

/** node_modules/<name> (scoped or nested alike) that holds `file`, as package-lock.json names it. */
export function lockKeyOf(modules, file) {
  if (!file.startsWith(modules + sep)) return undefined
  const parts = ['node_modules', ...relative(modules, file).split(sep)]
  const at = parts.lastIndexOf('node_modules')
  return parts.slice(0, at + (parts[at + 1]?.startsWith('@') ? 3 : 2)).join('/')
}

/**
 * Packages that only devDependencies bring ("dev": true in the lock file) stay out of the bundle
 * even where reachable (debug's optional require('supports-color'), inside a try); they are
 * reported, so a real use would show before the release test fails on it.
 */
function leaveOutDevPackages(modules, lock, leftOut) {
  return {
    name: 'leave-out-dev-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === 'checked' || args.path.startsWith('node:')) return undefined
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: 'checked',
        })
        const key = resolved.errors.length === 0 && !resolved.external ? lockKeyOf(modules, resolved.path) : undefined
        if (key === undefined || !lock.packages[key]?.dev) return undefined
        leftOut.add(`${key} (from ${relative(modules, args.importer)})`)
        return { path: args.path, external: true }
      })
    },
  }
}

/** Bundles into `outDir`; returns the files made and every source file that went in (for the notices). */
export async function bundle(root, outDir) {
  const { build } = createRequire(join(root, 'package.json'))('esbuild')
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const modules = realpathSync(join(root, 'node_modules'))
  const leftOut = new Set()
  const common = {
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    banner: { js: BANNER },
    define: { 'import.meta.url': '__bundleUrl' },
    alias: { constantinople: './scripts/release/constantinople.cjs' },
    // Only the example's own "run as a script" branch imports the package by name; in the bundle
    // it is never taken (see BANNER).
    external: ['facility-service'],
    plugins: [leaveOutDevPackages(modules, lock, leftOut)],
    legalComments: 'external',
    metafile: true,
    logLevel: 'warning',
    // pino's transports and pug's filters name modules at run time; the service uses neither.
    logOverride: { 'unsupported-require-call': 'silent', 'unsupported-dynamic-import': 'silent' },
  }
  const entries = [['main', 'cli.ts'], ...Object.entries(WORKER_ENTRIES)]
  const results = await Promise.all(
    entries.map(([name, entry]) => build({ ...common, entryPoints: [entry], outfile: join(outDir, `${name}.mjs`) })),
  )
  const inputs = new Set(results.flatMap((result) => Object.keys(result.metafile.inputs).map((f) => join(root, f))))
  const files = Object.fromEntries(entries.map(([name]) => [name, join(outDir, `${name}.mjs`)]))
  return { files, inputs: [...inputs].sort(), leftOut: [...leftOut].sort() }
}
