// What the executable carries beside its code, as assets, and the manifest that lists them with
// their checksums (read by lib/executable.ts; its ExecutableManifest type is this file's output).
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  )
}

/** Where the files the executable carries come from: in the project and in node_modules. */
export function assetSources(root) {
  const require = createRequire(join(root, 'package.json'))
  const swaggerUi = join(dirname(require.resolve('@fastify/swagger-ui/package.json')), 'static')
  const files = { 'package.json': join(root, 'package.json'), 'schema.sql': join(root, 'schema.sql') }
  // The board's page and the service's icon (public/favicon.svg).
  for (const file of walk(join(root, 'public'))) files[relative(root, file)] = file
  for (const file of walk(swaggerUi)) files[`swagger-ui/${relative(swaggerUi, file)}`] = file
  return {
    files,
    addon: join(dirname(require.resolve('better-sqlite3/package.json')), 'prebuilds', 'linux-x64.node'),
    quickjs: require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm'),
  }
}

/**
 * The asset map for the executable's configuration and the manifest (written to `outDir` and made
 * an asset itself). `workers` are the bundles of the worker threads by name.
 */
export function writeAssets(root, outDir, workers) {
  const sources = assetSources(root)
  const assets = {}
  const entry = (key, path) => {
    assets[key] = path
    return { asset: key, sha256: sha256(readFileSync(path)) }
  }
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
  const manifest = {
    version,
    files: Object.fromEntries(
      Object.entries(sources.files).map(([path, file]) => [path, entry(`files/${path}`, file)]),
    ),
    addon: entry('better_sqlite3.node', sources.addon),
    quickjs: entry('quickjs.wasm', sources.quickjs),
    workers: Object.fromEntries(
      Object.entries(workers).map(([name, file]) => [name, entry(`workers/${name}.mjs`, file)]),
    ),
  }
  const manifestFile = join(outDir, 'manifest.json')
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 1))
  assets['manifest.json'] = manifestFile
  return { assets, manifest }
}
