import { existsSync, fstatSync, readdirSync, statSync } from 'node:fs'

/**
 * Whether another descriptor of this process is open on the same file as `fd` (the one SQLite has
 * open). Off Linux there is nothing to compare with, and the answer is `whenUnknown`.
 */
export function openedElsewhere(fd: number, whenUnknown = true): boolean {
  if (!existsSync('/proc/self/fd')) return whenUnknown
  const own = fstatSync(fd)
  return readdirSync('/proc/self/fd').some((entry) => {
    if (Number(entry) === fd) return false
    try {
      const other = statSync(`/proc/self/fd/${entry}`)
      return other.dev === own.dev && other.ino === own.ino
    } catch {
      return false // closed meanwhile
    }
  })
}
