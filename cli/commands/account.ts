import type { Command } from 'commander'
import { createBlockedAccounts } from '../../db/repositories/blocked-accounts.js'
import { nonEmpty } from '../arguments.js'
import { withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

/**
 * `account block|unblock|list`: an account blocked here is refused on the running server from its
 * next request, whatever token it presents: a service token, or a provider token still within its
 * lifetime (the provider's own disabling counts only once its tokens expire; docs/SIGN-IN.md).
 */
export function addAccountCommand(program: Command, io: CliIo): void {
  const account = program.command('account').description('block and unblock accounts (service and provider tokens)')
  account
    .command('block')
    .description('refuse every token of an account, at once')
    .argument('<account>', "the account as the service sees it (a token's account, OIDC_ACCOUNT_CLAIM)", nonEmpty)
    .option('--reason <text>', 'a note kept with the block')
    .action((name: string, opts: { reason?: string }) => {
      withDatabase(program, (db) => {
        const blocked = createBlockedAccounts(db).block(name, opts.reason ?? null)
        io.out(blocked ? `blocked account ${name}` : `account ${name} was blocked already`)
      })
    })
  account
    .command('unblock')
    .description('accept the tokens of a blocked account again')
    .argument('<account>', 'the account', nonEmpty)
    .action((name: string) => {
      withDatabase(program, (db) => {
        if (!createBlockedAccounts(db).unblock(name)) throw new CliError(`account ${name} is not blocked`)
        io.out(`unblocked account ${name}`)
      })
    })
  account
    .command('list')
    .description('list blocked accounts')
    .option('--json', 'one JSON object per line')
    .action((opts: { json?: boolean }) => {
      withDatabase(program, (db) => {
        const rows = createBlockedAccounts(db).list()
        if (!opts.json) io.out(['account', 'blocked', 'reason'].join('\t'))
        for (const row of rows)
          io.out(
            opts.json
              ? JSON.stringify(row)
              : [row.account, new Date(row.blockedAt).toISOString(), row.reason ?? ''].join('\t'),
          )
      })
    })
}
