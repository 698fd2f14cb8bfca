import { type Command, Option } from 'commander'
import { createNotificationRepository, DIRECTIONS, type NewNotification } from '../../db/repositories/notifications.js'
import { accountAsNamed } from '../../domain/principal.js'
import { jsonObject, nonEmpty } from '../arguments.js'
import { withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

type NotifyOptions = Omit<NewNotification, 'facility'> & { facility?: string }

/** `notify`: posts a notification, for scripts of other systems; prints its id alone. */
export function addNotifyCommand(program: Command, io: CliIo): void {
  program
    .command('notify')
    .description('post a notification and print its id; without --to it is for everyone of the facility')
    .requiredOption('--code <code>', 'kind of notification, e.g. new-queue-item', nonEmpty)
    .requiredOption('--type <type>', 'category, e.g. warehouse', nonEmpty)
    .requiredOption('--title <text>', 'the headline', nonEmpty)
    .requiredOption('--body <text>', 'the message', nonEmpty)
    .option('--facility <id>', 'only for this facility (default: every facility)', nonEmpty)
    .option('--to <uid...>', 'only for these accounts (default: everyone)')
    .addOption(new Option('--direction <direction>', 'inbound or outbound').choices(DIRECTIONS))
    .option('--meta <json>', 'a JSON object for apps', jsonObject)
    .action((opts: NotifyOptions) => {
      if (opts.to?.some((uid) => uid.trim() === '')) throw new CliError('--to: account uids must not be empty')
      withDatabase(program, (db) => {
        // `OIDC:ann` is the provider person `oidc:ann`, the account their tokens read as.
        const to = opts.to?.map(accountAsNamed)
        io.out(createNotificationRepository(db).create({ ...opts, to, facility: opts.facility ?? null }).id)
      })
    })
}
