/**
 * constantinople's interface (what pug calls to fold constant expressions at compile time), folding
 * plain literals only: render/pug-safe.ts says why. A callable `isConstant` with named siblings.
 */
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

export function literalOnly(src: unknown): boolean {
  return isLiteral(src)
}
literalOnly.isConstant = isLiteral
literalOnly.toConstant = literalValue
literalOnly.default = literalOnly
