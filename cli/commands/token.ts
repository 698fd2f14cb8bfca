import { type Command, Option } from 'commander'
import { createTokenRepository, type TokenInfo } from '../../db/repositories/tokens.js'
import { ROLES, type Role } from '../../domain/principal.js'
import { nonEmpty, serviceAccount } from '../arguments.js'
import { withDatabase } from '../database.js'
import { parseDuration } from '../duration.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

interface CreateOptions {
  account: string
  role: Role
  facility?: string
  label?: string
  expiresIn?: number
}

/** `token create|list|revoke`: the server reads tokens on every request, so changes count at once. */
export function addTokenCommand(program: Command, io: CliIo): void {
  const token = program.command('token').description('create, list and revoke API tokens')
  addCreate(token, program, io)
  addList(token, program, io)
  addRevoke(token, program, io)
}

function addCreate(token: Command, program: Command, io: CliIo): void {
  token
    .command('create')
    .description('create a token and print it, alone, on the last line')
    .requiredOption(
      '--account <uid>',
      "the account uid the token acts as (not oidc:..., the identity provider's people)",
      serviceAccount,
    )
    .addOption(new Option('--role <role>', 'what the token may do').choices(ROLES).makeOptionMandatory())
    .option('--facility <id>', 'bind the token to one facility (default: all facilities)', nonEmpty)
    .option('--label <text>', 'a note to recognise the token by')
    .option('--expires-in <duration>', 'lifetime, e.g. 12h, 30d (default: no expiry)', parseDuration)
    .action((opts: CreateOptions) => {
      withDatabase(
        program,
        (db) => {
          const now = Date.now()
          const { token: secret, info } = createTokenRepository(db).create(
            {
              account: opts.account,
              role: opts.role,
              facility: opts.facility ?? null,
              label: opts.label ?? null,
              expiresAt: opts.expiresIn === undefined ? null : now + opts.expiresIn,
            },
            now,
          )
          io.out(
            `created token ${info.tokenId} (account ${info.account}, role ${info.role}, facility ${info.facility ?? 'all'})`,
          )
          // Alone on the last line, so a script can take it with `tail -n 1`.
          io.out(secret)
        },
        // The first token of a new installation may come before the server ever ran.
        { mayCreate: true },
      )
    })
}

function addList(token: Command, program: Command, io: CliIo): void {
  token
    .command('list')
    .description('list tokens (never their secrets)')
    .option('--json', 'one JSON object per line')
    .action((opts: { json?: boolean }) => {
      withDatabase(program, (db) => {
        const tokens = createTokenRepository(db).list()
        if (!opts.json) io.out(['id', 'account', 'role', 'facility', 'expires', 'state', 'label'].join('\t'))
        for (const t of tokens) io.out(opts.json ? JSON.stringify(t) : describeToken(t))
      })
    })
}

function addRevoke(token: Command, program: Command, io: CliIo): void {
  token
    .command('revoke')
    .description('revoke a token; the running server refuses it from the next request on')
    .argument('<id>', 'the token id (first column of `token list`)')
    .action((id: string) => {
      withDatabase(program, (db) => {
        if (!createTokenRepository(db).revoke(id)) throw new CliError(`no active token with id ${id}`)
        io.out(`revoked token ${id}`)
      })
    })
}

/** One row of `token list`, tab-separated under its header. */
function describeToken(t: TokenInfo): string {
  const iso = (ms: number | null) => (ms === null ? '-' : new Date(ms).toISOString())
  return [
    t.tokenId,
    t.account,
    t.role,
    t.facility ?? '*',
    iso(t.expiresAt),
    t.revokedAt ? 'revoked' : 'active',
    t.label ?? '',
  ].join('\t')
}
