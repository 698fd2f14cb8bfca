import { spawnSync } from 'node:child_process'

export const NOBODY = 65_534

/**
 * What another local user (uid 65534) gets when reading `file`: "read" or the error code. The
 * child is this same Node, so its binary must be reachable by that user: a Node kept in a private
 * directory (mktemp -d makes them 0700) cannot start, which is said as such rather than taken for
 * an answer.
 */
export function readAsNobody(file: string): string {
  const script = `try { require('fs').readFileSync(${JSON.stringify(file)}); console.log('read') } catch (e) { console.log(e.code) }`
  const run = spawnSync(process.execPath, ['-e', script], { uid: NOBODY, gid: NOBODY, encoding: 'utf8' })
  if (run.error || run.status !== 0)
    throw new Error(
      `cannot run ${process.execPath} as uid ${NOBODY} (${run.error?.message ?? run.stderr}): every directory above it must be open to other users`,
    )
  return run.stdout.trim()
}
