import { readdirSync, renameSync, utimesSync } from 'node:fs'
import { basename, join } from 'node:path'
import t, { type Test } from 'tap'
import { backupNameFor } from '../../db/backup-files.js'
import { listBackups, newestBackup, pruneBackups, takeBackup } from '../../db/backups.js'
import { openDatabase } from '../../db/connection.js'
import { buildTestApp, operatorHealth } from '../helper.js'

// A backup's time is the time in its name, which the service wrote when it took it; the file's
// modification time says when something last touched the file (a `cp` putting an old copy back,
// a tar extracted, a `touch`), and the clock may have been wrong meanwhile. Here the two disagree,
// so pruning, /health and the start's backup show which one they go by.

const HOUR = 3_600_000
const DAY = 24 * HOUR

function backupDirectory(t: Test): { root: string; dir: string } {
  const root = t.testdir({ backups: {} })
  return { root, dir: join(root, 'backups') }
}

/** Real backups named at `names` (ms), each file's modification time set to its `mtimes` twin. */
async function backupsNamedAt(dir: string, database: string, names: number[], mtimes: number[]) {
  const db = openDatabase(database)
  try {
    const files: string[] = []
    for (const [i, at] of names.entries()) {
      const { file } = await takeBackup(db, dir, at)
      const mtime = (mtimes[i] as number) / 1000
      utimesSync(file, mtime, mtime)
      files.push(file)
    }
    return files
  } finally {
    db.close()
  }
}

t.test('pruning keeps the newest by the time in their names, whatever the files’ modification times say', async (t) => {
  const { root, dir } = backupDirectory(t)
  const now = Date.now()
  const named = [now - 3 * DAY, now - 2 * DAY, now - DAY]
  // The oldest was copied back into the directory just now (cp: a new modification time); the
  // newest was restored from an archive that kept a time from long ago.
  const [oldest, middle, newest] = await backupsNamedAt(dir, join(root, 'ward.db'), named, [
    now,
    now - 2 * DAY,
    now - 30 * DAY,
  ])
  t.same(
    listBackups(dir).map((backup) => backup.file),
    [newest, middle, oldest],
    'listed newest first by name',
  )
  t.same(
    listBackups(dir).map((backup) => backup.at),
    [named[2], named[1], named[0]],
    'each with the time of its name',
  )
  t.same(pruneBackups(dir, 2), [oldest], 'the oldest by name goes, though its file was touched last')
  t.same(readdirSync(dir).sort(), [basename(middle as string), basename(newest as string)])
  t.equal(newestBackup(dir, now)?.file, newest, 'the newest is the newest by name')
})

t.test('/health reports the backup newest by name and its age by that time', async (t) => {
  const { root, dir } = backupDirectory(t)
  const now = Date.now()
  // A stale copy touched now, and the real last backup whose file time is old.
  const [, last] = await backupsNamedAt(
    dir,
    join(root, 'ward.db'),
    [now - 5 * DAY, now - 2 * HOUR],
    [now, now - 9 * DAY],
  )
  const { app } = await buildTestApp(t, { DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: dir, BACKUP_KEEP: 5 })
  await app.backups.runNow() // joins the backup the start began (the last one is older than the hour)
  const taken = listBackups(dir)[0]
  t.not(taken?.file, last, 'a new backup was taken at the start')
  const health = (await operatorHealth(app)).json().backups
  t.equal(health.lastAt, taken?.at, 'lastAt is the new backup’s name time')
  t.equal(basename(taken?.file as string), backupNameFor(health.lastAt))
  t.ok(health.ageMs >= 0 && health.ageMs < HOUR, 'and its age is counted from it')
})

t.test(
  'the start backs up when the newest backup by name is older than the interval, a fresh file time notwithstanding',
  async (t) => {
    const { root, dir } = backupDirectory(t)
    const now = Date.now()
    const [old] = await backupsNamedAt(dir, join(root, 'ward.db'), [now - 3 * HOUR], [now])
    const { app } = await buildTestApp(t, { DATABASE_PATH: join(root, 'ward.db'), BACKUP_DIR: dir, BACKUP_KEEP: 5 })
    // The close waits for a backup in progress: the one the start began, if it began one.
    await app.close()
    const names = readdirSync(dir)
    t.equal(names.length, 2, 'one backup more than before')
    t.ok(names.includes(basename(old as string)))
  },
)

t.test(
  'a backup named in the future (a clock that ran ahead) is not the last one, even with a past file time',
  async (t) => {
    const { root, dir } = backupDirectory(t)
    const now = Date.now()
    const [ahead, real] = await backupsNamedAt(
      dir,
      join(root, 'ward.db'),
      [now + 30 * DAY, now - HOUR],
      [now - 2 * HOUR, now - 5 * DAY],
    )
    t.equal(newestBackup(dir, now)?.file, real, 'the newest by name that is not in the future')
    t.same(pruneBackups(dir, 1, real), [ahead], 'the backup just taken is spared; the one named ahead goes')
  },
)

t.test('a name the service never gives is no backup, whatever the file holds', async (t) => {
  const { root, dir } = backupDirectory(t)
  const [file] = await backupsNamedAt(dir, join(root, 'ward.db'), [Date.now() - HOUR], [Date.now()])
  renameSync(file as string, join(dir, 'facility-20261399T000000000Z.db'))
  t.same(listBackups(dir), [], 'month 99')
  t.same(pruneBackups(dir, 0), [], 'and it is never removed')
})
