/**
 * Loads pug with its compile-time constant folding restricted to plain literals. pug hands
 * attribute values and `= expr` code to constantinople, which *executes* whatever it considers
 * constant on the compiling host: 'x'.repeat(3e8) allocates gigabytes and a regex match can
 * backtrack for ever. Literal-only folding (constant-folding.ts) keeps static attributes and
 * classes fast and moves every real expression into the compiled code, which runs only inside the
 * isolate.
 */
import { createRequire } from 'node:module'
import { insideExecutable } from '../lib/executable.js'
import { literalOnly } from './constant-folding.js'

type Pug = typeof import('pug')

function constantinopleCopies(require: NodeJS.Require): Set<string> {
  const fromPug = createRequire(require.resolve('pug'))
  const fromCodeGen = createRequire(fromPug.resolve('pug-code-gen'))
  const users = [fromPug.resolve('pug-code-gen'), fromCodeGen.resolve('pug-attrs'), fromPug.resolve('pug-filters')]
  return new Set(users.map((user) => createRequire(user).resolve('constantinople')))
}

/** From node_modules: every copy of constantinople pug would load is put in require's cache first. */
function requireRestricted(): Pug {
  const require = createRequire(import.meta.url)
  for (const path of constantinopleCopies(require)) {
    require.cache[path] = { id: path, filename: path, loaded: true, exports: literalOnly } as unknown as NodeJS.Module
  }
  return require('pug') as Pug
}

/**
 * Inside the single executable pug is part of the bundle, built with `constantinople` resolved to
 * constant-folding.ts (scripts/release/bundle.mjs): there is no require cache to fill, and the
 * bundler follows only an import it can see.
 */
async function importBundled(): Promise<Pug> {
  return (await import('pug')).default as Pug
}

/** Fail closed if a pug upgrade (or a bundle) ever loads constantinople some other way. */
function checked(pug: Pug): Pug {
  if (pug.compileClient("p(title='x'.repeat(2))").includes('xx')) {
    throw new Error('pug constant folding could not be restricted')
  }
  return pug
}

let loaded: Pug | undefined
let failure: unknown

/** Loads pug once (a worker does it before it is ready); a failure is kept for loadPug to report. */
export async function preparePug(): Promise<Pug> {
  if (loaded) return loaded
  try {
    loaded = checked(insideExecutable() ? await importBundled() : requireRestricted())
    return loaded
  } catch (error) {
    failure = error
    throw error
  }
}

export function loadPug(): Pug {
  if (loaded) return loaded
  if (insideExecutable()) throw failure ?? new Error('pug is not loaded yet')
  loaded = checked(requireRestricted())
  return loaded
}
