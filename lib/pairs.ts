/**
 * Reads `name=value,name=value` (OIDC_ROLE_MAP), each value one of `values`. The last `=` splits,
 * so a name may hold one (a group's path); a name given twice must have one value. Throws a
 * message naming the bad entry.
 */
export function parsePairs<V extends string>(text: string, values: readonly V[]): Map<string, V> {
  const map = new Map<string, V>()
  for (const raw of text.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const at = entry.lastIndexOf('=')
    const name = at > 0 ? entry.slice(0, at).trim() : ''
    const value = entry.slice(at + 1).trim() as V
    if (name === '' || !values.includes(value)) throw new Error(`"${entry}" is not name=${values.join('|')}`)
    const known = map.get(name)
    if (known !== undefined && known !== value) throw new Error(`"${name}" is mapped to both ${known} and ${value}`)
    map.set(name, value)
  }
  return map
}
