// What `npm start` (package.json) runs, taken apart for the bench, the release build and its
// measurement, so each starts the server as a facility does: Node's flags (the words starting with
// `--`) and the environment set before `node` (`NAME=value` words, e.g. MALLOC_ARENA_MAX=2).
import { readFileSync } from 'node:fs'

const ROOT = new URL('..', import.meta.url)

export function startCommand() {
  const words = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')).scripts.start.split(' ')
  const before = words.slice(0, words.indexOf('node'))
  return {
    flags: words.filter((word) => word.startsWith('--')),
    env: Object.fromEntries(
      before
        .filter((word) => /^[A-Z_][A-Z0-9_]*=/.test(word))
        .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
    ),
  }
}
