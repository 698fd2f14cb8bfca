import { Command } from 'commander'
import { productVersion } from '../lib/product-files.js'
import { addAccountCommand } from './commands/account.js'
import { addAuditCommand } from './commands/audit.js'
import { addBackupCommand } from './commands/backup.js'
import { addBedsCommand } from './commands/beds.js'
import { addHl7Command } from './commands/hl7.js'
import { addNotifyCommand } from './commands/notify.js'
import { addRestoreCommand } from './commands/restore.js'
import { addRollbackCommand } from './commands/rollback.js'
import { addServeCommand } from './commands/serve.js'
import { addSmokeCommand } from './commands/smoke.js'
import { addTokenCommand } from './commands/token.js'
import { addDatabaseOptions } from './database.js'
import type { CliIo } from './io.js'

/**
 * The command-line tool, and the single executable's every use (`facility-service serve` runs the
 * server). It works on the database file directly, also while the server runs
 * (SQLite WAL lets both in), and the server reads tokens on every request, so changes count at once.
 */
export function buildProgram(io: CliIo): Command {
  const program = addDatabaseOptions(
    new Command('facility-service').description(
      'the facility-service server (serve) and the administration of its database',
    ),
  )
    // Before the commands are added: each copies these settings from its parent when it is made.
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    .exitOverride()
    .version(productVersion(), '-V, --version', 'print the version')

  // In the order `--help` lists them.
  addServeCommand(program)
  addTokenCommand(program, io)
  addAccountCommand(program, io)
  addBackupCommand(program, io)
  addRestoreCommand(program, io)
  addAuditCommand(program, io)
  addNotifyCommand(program, io)
  addBedsCommand(program, io)
  addHl7Command(program, io)
  addSmokeCommand(program, io)
  addRollbackCommand(program, io)
  return program
}
