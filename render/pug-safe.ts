/**
 * Loads pug with its compile-time constant folding restricted to plain literals. pug hands
 * attribute values and `= expr` code to constantinople, which *executes* whatever it considers
 * constant on the compiling host: 'x'.repeat(3e8) allocates gigabytes and a regex match can
 * backtrack for ever. Literal-only folding keeps static attributes and classes fast and moves
 * every real expression into the compiled code, which runs only inside the isolate.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

const SIMPLE_LITERAL = /^(?:'[^'\\\n\r]*'|"[^"\\\n\r]*"|-?\d{1,15}(?:\.\d{1,15})?|true|false|null|undefined)$/

/** pug passes attribute values as JS source, except `true` for bare attributes like `checked`. */
function isLiteral(src: unknown): boolean {
  return SIMPLE_LITERAL.test(String(src).trim())
}

function literalValue(src: unknown): unknown {
  const text = String(src).trim()
  if (!isLiteral(text)) throw new Error('not a constant')
  if (text === 'undefined') return undefined
  if (text.startsWith("'")) return text.slice(1, -1)
  return JSON.parse(text)
}

/** Stands in for constantinople's exports: a callable isConstant with named siblings. */
function literalOnly(src: unknown): boolean {
  return isLiteral(src)
}
literalOnly.isConstant = isLiteral
literalOnly.toConstant = literalValue
literalOnly.default = literalOnly

function constantinopleCopies(): Set<string> {
  const fromPug = createRequire(require.resolve('pug'))
  const fromCodeGen = createRequire(fromPug.resolve('pug-code-gen'))
  const users = [fromPug.resolve('pug-code-gen'), fromCodeGen.resolve('pug-attrs'), fromPug.resolve('pug-filters')]
  return new Set(users.map((user) => createRequire(user).resolve('constantinople')))
}

let loaded: typeof import('pug') | undefined

export function loadPug(): typeof import('pug') {
  if (loaded) return loaded
  for (const path of constantinopleCopies()) {
    require.cache[path] = { id: path, filename: path, loaded: true, exports: literalOnly } as unknown as NodeJS.Module
  }
  const pug = require('pug') as typeof import('pug')
  // Fail closed if a pug upgrade ever loads constantinople some other way.
  if (pug.compileClient("p(title='x'.repeat(2))").includes('xx')) {
    throw new Error('pug constant folding could not be restricted')
  }
  loaded = pug
  return pug
}
