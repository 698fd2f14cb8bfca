/**
 * The Node versions the service runs on: package.json's `engines.node`, which
 * test/supported-node.test.ts keeps equal to this list. The entries (server.ts, cli.ts) check the
 * running Node against it before they load anything else: an unsupported Node (20, end of life)
 * crashes in better-sqlite3's addon with a segmentation fault and no message. This module imports
 * nothing and uses nothing newer than Node 12, so that any Node reaches the check.
 */

/** Each supported release line by its lowest version (`^22.18.0`: 22.18.0 up to, not with, 23). */
export const SUPPORTED_NODE: ReadonlyArray<readonly [major: number, minor: number, patch: number]> = [
  [22, 18, 0],
  [24, 2, 0],
  [26, 0, 0],
]

/** The list as an npm range, the way package.json's engines writes it. */
export function supportedNodeRange(): string {
  return SUPPORTED_NODE.map((lowest) => `^${lowest.join('.')}`).join(' || ')
}

export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map((part) => Number.parseInt(part, 10))
  return SUPPORTED_NODE.some(
    ([lowMajor, lowMinor, lowPatch]) =>
      major === lowMajor && (minor > lowMinor || (minor === lowMinor && patch >= lowPatch)),
  )
}

/** On an unsupported Node: one line on stderr and exit code 1, before a module that could crash it loads. */
export function refuseUnsupportedNode(version: string = process.versions.node): void {
  if (isSupportedNode(version)) return
  process.stderr.write(
    `facility-service: Node ${version} is not supported; run it with Node ${supportedNodeRange()} (package.json "engines")\n`,
  )
  process.exit(1)
}
