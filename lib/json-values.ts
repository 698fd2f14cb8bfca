import createError from '@fastify/error'

/**
 * A body value refused after the schema passed it: the same code as a schema failure, since for a
 * client it is the same kind of mistake.
 */
export const InvalidBodyError = createError('FST_ERR_VALIDATION', '%s', 400)

/** `body.items[0].name`, as the schema messages name fields. */
function childPath(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`
}

/**
 * The first value in a parsed body that would silently change on its way to the database: a
 * number JSON can write but JavaScript cannot hold (`1e400` parses to Infinity and is stored as
 * null) or text with a lone UTF-16 surrogate (`"\ud800"`; SQLite would store other characters
 * than the ones answered and audited). Iterative, since a body may nest deeper than the stack.
 */
export function unstorableValue(value: unknown, name = 'body'): string | null {
  const stack: [unknown, string][] = [[value, name]]
  while (stack.length > 0) {
    const [item, path] = stack.pop() as [unknown, string]
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return `${path} must be a finite number`
    } else if (typeof item === 'string') {
      if (!item.isWellFormed()) return `${path} is not well-formed Unicode (it holds a lone surrogate)`
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], childPath(path, i)])
    } else if (typeof item === 'object' && item !== null) {
      for (const [key, child] of Object.entries(item)) {
        if (!key.isWellFormed()) return `${path} has a property name that is not well-formed Unicode`
        stack.push([child, childPath(path, key)])
      }
    }
  }
  return null
}

/**
 * How deeply arrays and objects nest in `value` (0 for a scalar), walked without recursion: a body
 * may nest deeper than any stack, and JSON.stringify or copying into the sandbox would recurse.
 */
export function nestingDepth(value: unknown): number {
  let deepest = 0
  const stack: [unknown, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number]
    if (typeof node !== 'object' || node === null) continue
    deepest = Math.max(deepest, depth + 1)
    for (const child of Object.values(node)) stack.push([child, depth + 1])
  }
  return deepest
}

/** Refuses `body.<name>` when it nests deeper than `max` levels (the value itself is one). */
export function refuseDeepNesting(name: string, value: unknown, max: number): void {
  const depth = nestingDepth(value)
  if (depth > max) throw new InvalidBodyError(`body.${name} is nested too deeply: ${depth} levels, at most ${max}`)
}
