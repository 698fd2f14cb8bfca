import { InvalidArgumentError } from 'commander'

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

/** A lifetime such as `12h` or `30d`, in milliseconds; commander shows the error to the user. */
export function parseDuration(text: string): number {
  const match = /^(\d{1,6})([smhdw])$/.exec(text)
  if (!match) throw new InvalidArgumentError('use a number and a unit, e.g. 90s, 15m, 12h, 30d, 8w')
  return Number(match[1]) * (UNITS[match[2] as string] as number)
}
