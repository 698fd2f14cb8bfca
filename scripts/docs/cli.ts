import type { Command } from 'commander'
import { buildProgram } from '../../cli/program.js'

/**
 * docs/reference/CLI.md, written from the command-line tool's own help (commander's, the text
 * `facility-service <command> --help` prints), every command and subcommand in the order `--help`
 * lists them. `npm run docs` writes it; test/docs/cli-reference.test.ts fails when it is stale.
 */

/** Wide enough for every option's line, and the same on every terminal. */
const HELP_WIDTH = 100

const silent = { out: () => {}, err: () => {} }

/** Every command of the program, the program first, each followed by its subcommands. */
export function* commandsOf(command: Command, path: string[] = []): Generator<[string[], Command]> {
  yield [path, command]
  for (const sub of command.commands) yield* commandsOf(sub, [...path, sub.name()])
}

function helpOf(command: Command): string {
  command.configureOutput({ getOutHelpWidth: () => HELP_WIDTH, getOutHasColors: () => false })
  return command.helpInformation().trimEnd()
}

const HEADER = `# Command-line tool

<!-- Written by \`npm run docs\` from the program's own help (cli/program.ts, cli/commands/): edit the
commands' descriptions, not this file. test/docs/cli-reference.test.ts fails when it is stale. -->

\`facility-service\` is the release executable, and \`npx facility-service\` in an npm install: \`serve\`
runs the server, every other command works on the database file directly, also while the server
runs (run it as the service's user: \`sudo -u facility-service facility-service ...\`). The database
is \`--database\`, else \`DATABASE_PATH\`, else \`./data/facility.db\`, given before or after the command;
a command that opens it refuses a file that does not exist (a mistyped path), but \`serve\` and
\`token create\`, which may start a new database. Exit codes: 0 done, 1 failed (the reason on stderr),
75 the database stayed locked by another process past \`--busy-timeout\` (run it again).
`

/** The whole of docs/reference/CLI.md. */
export function cliReference(): string {
  const lines = [HEADER]
  for (const [path, command] of commandsOf(buildProgram(silent))) {
    lines.push(`## ${['facility-service', ...path].join(' ')}`, '', '```text', helpOf(command), '```', '')
  }
  return lines.join('\n')
}
