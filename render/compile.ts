/**
 * Turns a pug or ejs layout into a function body for the isolate. Runs only in the compile
 * worker (see compiler.ts), so a slow or huge compile never blocks the event loop. Nothing here
 * executes template code (see pug-safe.ts for pug's constant folding).
 */
import { Script } from 'node:vm'
import ejs from 'ejs'
import { loadPug } from './pug-safe.js'

export type CompileEngine = 'pug' | 'ejs'
export type CompileOutcome = { ok: true; body: string } | { ok: false; message: string }

/** A compiled body of this size is not a print layout any more; it would only fill the cache. */
export const MAX_BODY_CHARS = 8 * 1024 * 1024

const LABELS: Record<CompileEngine, string> = { pug: 'Pug', ejs: 'ejs' }

export function compileTemplate(engine: CompileEngine, source: string): CompileOutcome {
  try {
    const body = engine === 'pug' ? compilePug(source) : compileEjs(source)
    if (body.length > MAX_BODY_CHARS) return { ok: false, message: 'the compiled template is too large' }
    return { ok: true, body }
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) }
  }
}

class TemplateSyntaxError extends Error {}

function notAvailable(feature: string): never {
  throw new TemplateSyntaxError(`${feature} are not available in print layouts`)
}

function rejectFilters(node: unknown, depth = 0): void {
  if (node === null || typeof node !== 'object' || depth > 10_000) return
  if ((node as { type?: unknown }).type === 'Filter') notAvailable('filters')
  for (const value of Object.values(node)) rejectFilters(value, depth + 1)
}

/** Includes and extends would read host files, filters would require() host modules. */
const pugGuard = {
  resolve: () => notAvailable('include and extends'),
  read: () => notAvailable('include and extends'),
  preFilters: (ast: unknown) => {
    rejectFilters(ast)
    return ast
  },
}

// Not `template`: the record's own `template` field is kept from layouts, so that name must not
// resolve to anything inside them either.
const LAYOUT_FN = '__printLayout'
const PUG_OPTIONS = { name: LAYOUT_FN, compileDebug: true, inlineRuntimeFunctions: true, plugins: [pugGuard] }

function compilePug(source: string): string {
  const pug = loadPug()
  let body: string
  try {
    body = `${pug.compileClient(source, PUG_OPTIONS)}\nreturn ${LAYOUT_FN}`
  } catch (error) {
    // pug's `with` rewriting rejects invalid JS without a line; the same code without the
    // rewriting (self: true) fails checkBody with one.
    if (error instanceof Error && 'babylonError' in error) {
      checkBody(`${pug.compileClient(source, { ...PUG_OPTIONS, self: true })}\nreturn ${LAYOUT_FN}`, source, 'pug')
    }
    throw tidyPugMessage(error)
  }
  checkBody(body, source, 'pug')
  return body
}

/** pug-load appends "at <filename> line N"; without a file name that reads "at undefined". */
function tidyPugMessage(error: unknown): unknown {
  if (error instanceof Error) error.message = error.message.replace(/\n\s+at undefined line (\d+)$/, ' (line $1)')
  return error
}

function compileEjs(source: string): string {
  const template = new ejs.Template(source, { client: true, compileDebug: true, strict: false, _with: true })
  let fn: ReturnType<typeof template.compile>
  try {
    fn = template.compile()
  } catch (error) {
    if (error instanceof SyntaxError) throw describeSyntaxError(template.source, source, 'ejs', error)
    throw error
  }
  const body = `var ${LAYOUT_FN} = ${fn.toString()}\nreturn ${LAYOUT_FN}`
  checkBody(body, source, 'ejs')
  return body
}

/**
 * The isolate builds the template with its own Function constructor, which demands exactly one
 * function body; checking the same here reports syntax errors at compile time with a line.
 */
function checkBody(body: string, source: string, engine: CompileEngine): void {
  try {
    new Function(body)
  } catch (error) {
    if (error instanceof SyntaxError) throw describeSyntaxError(body, source, engine, error)
    throw error
  }
}

const LINE_MARKER = /(?:pug_debug_line|__line) = (\d+)/

/** node:vm is used only to parse (never run) the generated code, to learn where it breaks. */
function describeSyntaxError(generated: string, source: string, engine: CompileEngine, error: SyntaxError) {
  const fallback = error.message.split(' while compiling ejs')[0] ?? error.message
  let generatedLine: number | undefined
  try {
    new Script(`(function(){\n${generated}\n})`, { filename: 'template' })
  } catch (parseError) {
    const match = parseError instanceof Error ? /^template:(\d+)/.exec(parseError.stack ?? '') : null
    if (match?.[1]) generatedLine = Number(match[1]) - 1
  }
  if (generatedLine === undefined) return new TemplateSyntaxError(`${fallback} (the template code is not well-formed)`)
  const line = templateLine(generated, generatedLine)
  return new TemplateSyntaxError(`${LABELS[engine]}:${line}\n${excerpt(source, line)}\n\nSyntaxError: ${fallback}`)
}

function templateLine(generated: string, generatedLine: number): number {
  const lines = generated.split('\n').slice(0, generatedLine)
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = LINE_MARKER.exec(lines[i] ?? '')
    if (match?.[1]) return Number(match[1])
  }
  return 1
}

/** The same shape of excerpt pug and ejs put in their own messages. */
function excerpt(source: string, line: number): string {
  const lines = source.split('\n')
  const start = Math.max(line - 3, 0)
  const end = Math.min(lines.length, line + 2)
  return lines
    .slice(start, end)
    .map((text, i) => `${start + i + 1 === line ? '  > ' : '    '}${start + i + 1}| ${text}`)
    .join('\n')
}
