import { userInfo } from 'node:os'
import { type Command, Option } from 'commander'
import type { Database } from '../../db/connection.js'
import { createAuditLog } from '../../db/repositories/audit.js'
import { createBedStateRepository } from '../../db/repositories/bed-states.js'
import { createBedRepository, type ListChangedBy } from '../../db/repositories/beds.js'
import { createFeedLog } from '../../db/repositories/feed.js'
import { createNotificationRepository } from '../../db/repositories/notifications.js'
import type { Principal } from '../../domain/principal.js'
import { HOUSEKEEPING_STATES, type HousekeepingState } from '../../schemas/beds.js'
import { placeName } from '../arguments.js'
import { openExisting, withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

/**
 * `beds add|remove|list|state`: beds that were never occupied, for the bed board (docs/BOARD.md);
 * beds with occupants show anyway; and a bed's housekeeping state.
 */
export function addBedsCommand(program: Command, io: CliIo): void {
  const beds = program
    .command('beds')
    .description("the beds of a ward: list the ones never occupied, remove one, set a bed's state")
  addAdd(beds, program, io)
  addRemove(beds, program, io)
  addList(beds, program, io)
  addState(beds, program, io)
}

function facilityOption(): Option {
  return new Option('--facility <id>', 'the facility (default: the records without one)').argParser(placeName)
}

function addAdd(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('add')
    .description('list a bed (or change its room; audited); it shows on the board, free, from the next load')
    .requiredOption('--bed <bed>', 'the bed id, as occupants name it', placeName)
    .option('--room <room>', 'its room', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; room?: string; facility?: string }) => {
      const added = withDatabase(program, (db) =>
        createBedRepository(db).add({ ...opts, facility: opts.facility ?? null }, Date.now(), changedBy(db)),
      )
      io.out(added ? `listed bed ${opts.bed}` : `bed ${opts.bed} was listed already; room updated`)
    })
}

function addRemove(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('remove')
    .description('take a bed off the board (audited; a bed with an active stay stays on it until discharged)')
    .requiredOption('--bed <bed>', 'the bed id', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; facility?: string }) => {
      const removed = withDatabase(program, (db) =>
        createBedRepository(db).remove(opts.facility ?? null, opts.bed, changedBy(db)),
      )
      const where = opts.facility ? ` in ${opts.facility}` : ''
      if (removed === 'unknown') throw new CliError(`bed ${opts.bed} is not listed${where}, and has had no stay`)
      if (removed === 'occupied')
        throw new CliError(`bed ${opts.bed}${where} has an active stay: it stays on the board until discharged`)
      io.out(
        removed === 'removed'
          ? `removed bed ${opts.bed}`
          : `took bed ${opts.bed} off the list; it stays on the board while its stay is active`,
      )
    })
}

function addList(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('list')
    .description('the listed beds: facility, room, bed (tab-separated; * for no facility)')
    .addOption(facilityOption())
    .action((opts: { facility?: string }) => {
      for (const bed of withDatabase(program, (db) => createBedRepository(db).kept())) {
        if (opts.facility === undefined || bed.facility === opts.facility)
          io.out([bed.facility ?? '*', bed.room ?? '-', bed.bed].join('\t'))
      }
    })
}

/** The operating-system user running the CLI: its name, or its uid when it has none (a container's). */
export function operatingUser(who: () => { username: string } = userInfo): string {
  try {
    return who().username
  } catch {
    return `uid-${process.getuid?.() ?? 'unknown'}`
  }
}

/** Who the CLI acts as in the audit: the operating-system account running it. */
function cliPrincipal(): Principal {
  const account = `cli:${operatingUser()}`
  return { tokenId: account, account, role: 'admin', facility: null }
}

/** The list of beds changed by the CLI's operator, audited as such (resource `beds`). */
function changedBy(db: Database): ListChangedBy {
  return { actor: cliPrincipal(), audit: createAuditLog(db) }
}

function bedStates(db: Database) {
  const notifications = createNotificationRepository(db)
  return createBedStateRepository(db, {
    audit: createAuditLog(db),
    feed: createFeedLog(db),
    // The default of BED_EXPECTED_HOURS: only the record of the change (audit, feed) reads it.
    expectedHours: 24,
    notify: (notification) => notifications.create(notification),
  })
}

function addState(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('state')
    .description("set a bed's housekeeping state, or clear it with none (audited, on the live feed)")
    .requiredOption('--bed <bed>', 'the bed id', placeName)
    .addOption(
      new Option('--state <state>', 'the state; none clears it')
        .choices([...HOUSEKEEPING_STATES, 'none'])
        .makeOptionMandatory(),
    )
    .option('--note <text>', 'why, for the ward (shown on the board)', placeName)
    .addOption(facilityOption())
    .action(async (opts: { bed: string; state: HousekeepingState | 'none'; note?: string; facility?: string }) => {
      const db = openExisting(program)
      try {
        const state = opts.state === 'none' ? null : opts.state
        const status = await bedStates(db).setHousekeeping(
          cliPrincipal(),
          opts.facility ?? null,
          opts.bed,
          state,
          opts.note ?? null,
        )
        // An occupied bed shows its patient first: say its housekeeping state beside it.
        const kept = status.housekeeping && status.housekeeping.state !== status.state
        io.out(`bed ${opts.bed}: ${status.state}${kept ? ` (${status.housekeeping?.state})` : ''}`)
      } catch (error) {
        if ((error as { code?: string }).code === 'BED_NOT_FOUND') throw new CliError((error as Error).message)
        throw error
      } finally {
        db.close()
      }
    })
}
