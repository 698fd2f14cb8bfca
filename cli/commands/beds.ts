import { type Command, Option } from 'commander'
import { createBedRepository } from '../../db/repositories/beds.js'
import { placeName } from '../arguments.js'
import { withDatabase } from '../database.js'
import { CliError } from '../errors.js'
import type { CliIo } from '../io.js'

/**
 * `beds add|remove|list`: beds that were never occupied, for the bed board (docs/BOARD.md);
 * beds with occupants show anyway.
 */
export function addBedsCommand(program: Command, io: CliIo): void {
  const beds = program.command('beds').description('list the beds of a ward that have never been occupied too')
  addAdd(beds, program, io)
  addRemove(beds, program, io)
  addList(beds, program, io)
}

function facilityOption(): Option {
  return new Option('--facility <id>', 'the facility (default: the records without one)').argParser(placeName)
}

function addAdd(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('add')
    .description('list a bed (or change its room); it shows on the board, free, from the next load')
    .requiredOption('--bed <bed>', 'the bed id, as occupants name it', placeName)
    .option('--room <room>', 'its room', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; room?: string; facility?: string }) => {
      const added = withDatabase(program, (db) =>
        createBedRepository(db).add({ ...opts, facility: opts.facility ?? null }),
      )
      io.out(added ? `listed bed ${opts.bed}` : `bed ${opts.bed} was listed already; room updated`)
    })
}

function addRemove(beds: Command, program: Command, io: CliIo): void {
  beds
    .command('remove')
    .description('take a bed off the list (a bed that has had occupants stays on the board)')
    .requiredOption('--bed <bed>', 'the bed id', placeName)
    .addOption(facilityOption())
    .action((opts: { bed: string; facility?: string }) => {
      const removed = withDatabase(program, (db) => createBedRepository(db).remove(opts.facility ?? null, opts.bed))
      if (!removed) throw new CliError(`bed ${opts.bed} is not listed${opts.facility ? ` in ${opts.facility}` : ''}`)
      io.out(`removed bed ${opts.bed}`)
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
