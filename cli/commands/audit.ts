import { type Command, Option } from 'commander'
import { createAuditLog } from '../../db/repositories/audit.js'
import { createReadLog } from '../../db/repositories/read-log.js'
import { withDatabase } from '../database.js'
import type { CliIo } from '../io.js'

const AUDIT_KINDS = ['changes', 'reads'] as const

interface AuditOptions {
  kind: (typeof AUDIT_KINDS)[number]
  resource?: string
  id?: string
  facility?: string
  account?: string
  after?: number
  limit: number
}

/** `audit`: the change log, or with `--kind reads` the read log, as JSON lines. */
export function addAuditCommand(program: Command, io: CliIo): void {
  program
    .command('audit')
    .description(
      'print audit log entries (changes, or with --kind reads the read log), oldest first, one JSON object per line',
    )
    .addOption(
      new Option('--kind <kind>', 'changes or reads (AUDIT_READS=true)').choices(AUDIT_KINDS).default('changes'),
    )
    .option('--resource <name>', 'e.g. ward-occupants, form-templates')
    .option('--id <recordId>', 'one record')
    .option('--facility <id>', 'one facility')
    .option('--account <uid>', 'one account')
    .option('--after <seq>', 'entries after this sequence number', (v) => Number.parseInt(v, 10))
    .option('--limit <n>', 'at most this many', (v) => Number.parseInt(v, 10), 1000)
    .action((opts: AuditOptions) => {
      withDatabase(program, (db) => {
        const filter = {
          resource: opts.resource,
          recordId: opts.id,
          facility: opts.facility,
          account: opts.account,
          afterSeq: opts.after,
          limit: opts.limit,
        }
        const entries =
          opts.kind === 'reads'
            ? createReadLog(db)
                .list(filter)
                .map((e) => ({ kind: 'read', ...e }))
            : createAuditLog(db)
                .list(filter)
                .map((e) => ({ kind: 'change', ...e }))
        for (const entry of entries) io.out(JSON.stringify(entry))
      })
    })
}
