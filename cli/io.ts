/** Where the tool writes, a line at a time without its line break: tests pass a recorder. */
export interface CliIo {
  out: (line: string) => void
  err: (line: string) => void
}

/** The process's own stdout and stderr, for the executable. */
export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}
