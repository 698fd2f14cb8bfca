import type { Command } from 'commander'
import { createBlockedAccounts } from '../../db/repositories/blocked-accounts.js'
import { createTokenRepository } from '../../db/repositories/tokens.js'
import { accountAsNamed, isProviderAccount, PROVIDER_ACCOUNT_PREFIX } from '../../domain/principal.js'
import { nonEmpty } from '../arguments.js'
import { withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

const ACCOUNT_HELP = `the account as the service names it: a service token's account as created (admin), or a person of the identity provider as ${PROVIDER_ACCOUNT_PREFIX}<OIDC_ACCOUNT_CLAIM value> (${PROVIDER_ACCOUNT_PREFIX}ann.nurse)`

/** What an account name stands for, said beside it so that `admin` and `oidc:admin` are never confused. */
function kindOf(account: string): string {
  return isProviderAccount(account)
    ? `${account} (identity provider tokens whose account claim is ${account.slice(PROVIDER_ACCOUNT_PREFIX.length)})`
    : `${account} (service tokens of that account)`
}

/**
 * `account block|unblock|list`: an account blocked here is refused on the running server from its
 * next request: a service account's tokens, or a provider person's (`oidc:<claim value>`) tokens
 * still within their lifetime (the provider's own disabling counts only once its tokens expire;
 * docs/SIGN-IN.md). The two namespaces never overlap: `admin` and `oidc:admin` are two accounts.
 */
export function addAccountCommand(program: Command, io: CliIo): void {
  const account = program
    .command('account')
    .description(
      `block and unblock accounts: service accounts (admin) and the identity provider's people (${PROVIDER_ACCOUNT_PREFIX}ann)`,
    )
  account
    .command('block')
    .description('refuse every token of an account, at once')
    .argument('<account>', ACCOUNT_HELP, nonEmpty)
    .option('--reason <text>', 'a note kept with the block')
    .action((typed: string, opts: { reason?: string }) => {
      const name = accountAsNamed(typed)
      withDatabase(program, (db) => {
        const blocked = createBlockedAccounts(db).block(name, opts.reason ?? null)
        io.out(blocked ? `blocked account ${kindOf(name)}` : `account ${kindOf(name)} was blocked already`)
        const serviceAccount = !isProviderAccount(name)
        if (
          serviceAccount &&
          !createTokenRepository(db)
            .list()
            .some((t) => t.account === name)
        )
          io.err(
            `note: no service token acts as ${name}; a person of the identity provider is ${PROVIDER_ACCOUNT_PREFIX}${name}`,
          )
      })
    })
  account
    .command('unblock')
    .description('accept the tokens of a blocked account again')
    .argument('<account>', ACCOUNT_HELP, nonEmpty)
    .action((typed: string) => {
      const name = accountAsNamed(typed)
      withDatabase(program, (db) => {
        const blocks = createBlockedAccounts(db)
        // A row stored as typed (`OIDC:ann`, from an older database) blocks no one, but can still go.
        if (!blocks.unblock(name) && !blocks.unblock(typed)) throw new CliError(`account ${name} is not blocked`)
        io.out(`unblocked account ${kindOf(name)}`)
      })
    })
  account
    .command('list')
    .description(`list blocked accounts (${PROVIDER_ACCOUNT_PREFIX}...: people of the identity provider)`)
    .option('--json', 'one JSON object per line')
    .action((opts: { json?: boolean }) => {
      withDatabase(program, (db) => {
        const rows = createBlockedAccounts(db).list()
        if (!opts.json) io.out(['account', 'kind', 'blocked', 'reason'].join('\t'))
        for (const row of rows) {
          const kind = isProviderAccount(row.account) ? 'provider' : 'service'
          io.out(
            opts.json
              ? JSON.stringify({ ...row, kind })
              : [row.account, kind, new Date(row.blockedAt).toISOString(), row.reason ?? ''].join('\t'),
          )
        }
      })
    })
}
