import { FAULT_MESSAGES, faultOfError } from '../db/storage-faults.js'
import { CliError, codeOf } from './errors.js'
import type { CliIo } from './io.js'
import { buildProgram } from './program.js'

/** Exit status for a database locked by another process past the wait (sysexits' EX_TEMPFAIL): retry. */
export const EXIT_BUSY = 75

/** Runs the tool; resolves to the process exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: 'user' })
    return 0
  } catch (error) {
    return exitCodeOf(error, io)
  }
}

/** Reports what stopped the tool, and the exit code that says so. */
function exitCodeOf(error: unknown, io: CliIo): number {
  const e = error as { code?: string; exitCode?: number; message?: string }
  // Commander has printed its own message (usage, help) already.
  if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return 0
  if (e.code?.startsWith('commander.')) return e.exitCode ?? 2
  const fault = error instanceof CliError ? null : faultOfError(error)
  if (fault !== null) {
    // The same words the server answers with, plus the code SQLite gave.
    io.err(`facility-service: ${FAULT_MESSAGES[fault]} (${codeOf(error)}: ${e.message})`)
    return fault === 'busy' ? EXIT_BUSY : 1
  }
  io.err(`facility-service: ${e.message ?? String(error)}`)
  return 1
}
