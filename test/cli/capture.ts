import type { CliIo } from '../../cli/io.js'

/** A CliIo that keeps what the tool printed, line by line. */
export function capture(): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = []
  const stderr: string[] = []
  return { stdout, stderr, out: (l) => stdout.push(l), err: (l) => stderr.push(l) }
}
