// The pieces every part of the bench's report writes its markdown with (bench/report.js and the
// parts it gathers: the limit, the peer, the ADT feed, the live feed).

/** A markdown table: the header, its rule, a line a row. */
export function table(header, body) {
  const line = (cells) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...body.map(line)].join('\n')
}

/** A target's verdict; a miss in bold. */
export const met = (ok) => (ok ? 'met' : '**not met**')

/** A count or a rate with thousands separators. */
export const num = (n, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits })

/** Bytes as whole MB (2^20). */
export const mb = (bytes) => (bytes / 2 ** 20).toFixed(0)

/** The quartiles of a median of pairs (bench/turns.js) as a table shows them. */
export const quartilesText = ({ quartiles }, digits = 2) => quartiles.map((q) => q.toFixed(digits)).join(' – ')
