/**
 * The single executable (docs/OPERATIONS.md, "Install"): whether this process runs inside it, and
 * what it carries. The release build (scripts/release/) bundles the code and stores beside it, as
 * assets of the executable, the product's own files (package.json, schema.sql, the board, the
 * OpenAPI page's static files), the QuickJS WebAssembly, the print workers' code and the SQLite
 * addon, listed with their checksums in one manifest. Outside the executable (the sources, dist/)
 * nothing here reads anything.
 */
import { dirname, join, sep } from 'node:path'
import * as sea from 'node:sea'
import { privateCacheDir, privateDirectory, sha256, useVerifiedFile, writeVerified } from './private-cache.js'

/** One asset of the executable and the sha256 of its bytes. */
export interface Asset {
  asset: string
  sha256: string
}

/** Written by scripts/release/assets.mjs as the asset `manifest.json`. */
export interface ExecutableManifest {
  version: string
  /** The product's files by their path in the project (`public/board/index.html`, `swagger-ui/logo.svg`). */
  files: Record<string, Asset>
  /** better-sqlite3's addon for this platform. */
  addon: Asset
  quickjs: Asset
  /** The worker threads' bundles by entry name (`render-worker`, `checkpoint-worker`). */
  workers: Record<string, Asset>
}

const MANIFEST_ASSET = 'manifest.json'
const INSIDE = sea.isSea()

export function insideExecutable(): boolean {
  return INSIDE
}

let manifest: ExecutableManifest | undefined

export function executableManifest(): ExecutableManifest {
  if (!INSIDE) throw new Error('not running inside the single executable')
  manifest ??= JSON.parse(sea.getAsset(MANIFEST_ASSET, 'utf8')) as ExecutableManifest
  return manifest
}

/** The asset's bytes as a view of the executable's own memory: read it, never write to it. */
export function assetBytes(entry: Asset): Uint8Array {
  return new Uint8Array(sea.getRawAsset(entry.asset))
}

export function assetText(entry: Asset): string {
  return sea.getAsset(entry.asset, 'utf8')
}

/** The manifest entry of one of the product's files; a path the build did not take in is an error. */
export function productFileAsset(path: string): Asset {
  const entry = executableManifest().files[path]
  if (!entry) throw new Error(`${path} is not one of the files in this executable`)
  return entry
}

let extracted: string | undefined

/**
 * The product's files on disk, for what can only serve files from a folder (@fastify/static): in
 * the private cache, one folder per set of files (named by their checksums, so two versions never
 * share one), each file written once and checked against its checksum at every start.
 */
export function extractedProductFiles(): string {
  if (extracted) return extracted
  const files = executableManifest().files
  const id = sha256(Buffer.from(JSON.stringify(files))).slice(0, 16)
  const root = privateDirectory(join(privateCacheDir(), `files-${id}`))
  for (const [path, entry] of Object.entries(files)) {
    const target = join(root, path)
    if (!target.startsWith(root + sep)) throw new Error(`the manifest names a file outside its folder: ${path}`)
    privateDirectory(dirname(target))
    writeVerified(target, assetBytes(entry), entry.sha256, 0o600)
  }
  extracted = root
  return root
}

let addon: object | undefined

/**
 * better-sqlite3's addon from the executable: written once to the private cache, named by its
 * checksum, then opened, verified and loaded through one descriptor (useVerifiedFile): the file
 * loaded is the file verified, even if something were renamed over its name in between.
 */
export function sqliteAddon(): object {
  if (addon) return addon
  const entry = executableManifest().addon
  const path = join(privateCacheDir(), `better_sqlite3-${entry.sha256}.node`)
  writeVerified(path, assetBytes(entry), entry.sha256, 0o500)
  addon = useVerifiedFile(path, entry.sha256, function load(file) {
    const module = { exports: {} }
    process.dlopen(module, file)
    return module.exports
  })
  return addon
}
