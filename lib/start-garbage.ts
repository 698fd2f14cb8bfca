import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void

/**
 * One full garbage collection that gives memory back (V8's "last resort" one: it also shrinks the
 * young generation), for a server that has just been built: starting leaves megabytes of garbage
 * (compiled schemas' sources, migrations, module loading) and a young generation grown to its
 * limit, which V8 would otherwise keep until its own memory reducer runs, seconds or minutes later.
 * V8's gc function is taken from a fresh context while the flag that exposes it is set, then the
 * flag is cleared: the service's own global never has it.
 */
export function releaseStartGarbage(): void {
  setFlagsFromString('--expose-gc')
  let collect: Collect
  try {
    collect = runInNewContext('gc') as Collect
  } finally {
    setFlagsFromString('--no-expose-gc')
  }
  collect({ type: 'major', execution: 'sync', flavor: 'last-resort' })
}
