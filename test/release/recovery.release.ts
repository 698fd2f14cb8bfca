import { copyFileSync, existsSync, readdirSync, renameSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { litestreamBinary } from '../../db/replication/litestream-config.js'
import { stopServer } from '../reliability/server-process.js'
import { type Install, installAlone, releaseBuild, runExecutable, serveExecutable } from './helpers.js'

// Every command that opens a database, run by the executable alone (PATH=/nonexistent, a HOME and
// nothing else; Litestream beside it, named by LITESTREAM_PATH as a facility's unit does): the way
// back after the loss of the machine must work on a release install, not only from the sources.
// `rollback` is run by rollback.release.ts; `serve` by every file here.
const release = releaseBuild()

/** The ward occupants' ids in a database file, read with this checkout's SQLite, not the executable's. */
function occupantIds(file: string): string[] {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare('SELECT id FROM ward_occupants ORDER BY id').pluck().all() as string[]).sort()
  } finally {
    db.close()
  }
}

async function admit(base: string, token: string, bed: string): Promise<string> {
  const res = await fetch(`${base}/ward-occupants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ encounter: `e-${bed}`, bed, occupiedBy: `p-${bed}` }),
  })
  if (res.status !== 200) throw new Error(`admission of ${bed}: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { id: string }).id
}

/** Runs one command of the executable, records that it ran, and expects it to succeed. */
function commands(install: Install, extra: Record<string, string>) {
  const ran = new Set<string>()
  const run = async (args: string[]) => {
    ran.add(args[0] as string)
    const result = await runExecutable(install, args, extra)
    if (result.code !== 0) throw new Error(`facility-service ${args.join(' ')}: exit ${result.code}: ${result.stderr}`)
    return result.stdout
  }
  return { run, ran }
}

t.test('from the executable alone: tokens, backup, verify, restore from a backup and from a replica', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  const litestream = join(install.dir, 'litestream')
  copyFileSync(litestreamBinary(''), litestream)
  const replica = `file://${join(install.dir, 'replica')}`
  const { run, ran } = commands(install, { LITESTREAM_PATH: litestream })

  const admin = (await run(['token', 'create', '--account', 'it', '--role', 'admin'])).trim().split('\n').at(-1) ?? ''
  const spare = (await run(['token', 'create', '--account', 'spare', '--role', 'read'])).trim().split('\n').at(-1)
  const spareId = spare?.split('_')[1] ?? ''
  t.match(await run(['token', 'revoke', spareId]), `revoked token ${spareId}`, 'token revoke')
  t.match(await run(['token', 'list']), new RegExp(`${spareId}\\tspare\\tread\\t.*\\trevoked`), 'token list')

  const server = await serveExecutable(install, { REPLICA_URL: replica, LITESTREAM_PATH: litestream })
  t.teardown(() => stopServer(server, 'SIGKILL'))
  const ids = [await admit(server.base, admin, 'B-1'), await admit(server.base, admin, 'B-2')]
  const backup = join(install.dir, 'ward-backup.db')
  t.match(await run(['backup', backup]), /backed up \d+ pages/, 'backup while serving')
  t.match(await run(['backup', 'verify', backup]), /ok/, 'backup verify')
  t.match(await run(['audit']), /"operation":"create"/, 'audit')
  t.match(await run(['notify', '--code', 'c', '--type', 't', '--title', 'Hi', '--body', 'ward']), /./, 'notify')
  t.match(await run(['beds', 'add', '--bed', 'B-9', '--room', 'R-1']), 'listed bed B-9', 'beds add')
  t.match(await run(['beds', 'list']), /\*\tR-1\tB-9/, 'beds list')
  t.match(await run(['beds', 'remove', '--bed', 'B-9']), 'removed bed B-9', 'beds remove')
  t.match(await run(['account', 'block', 'leaver', '--reason', 'left']), 'blocked account leaver', 'account block')
  t.match(await run(['account', 'list']), /leaver\tservice\t\S+\tleft/, 'account list: a service account')
  t.match(await run(['account', 'unblock', 'leaver']), 'unblocked account leaver', 'account unblock')
  t.match(await run(['smoke']), /smoke test passed/, 'smoke')
  ids.push(await admit(server.base, admin, 'B-3'))
  t.equal(await stopServer(server), 0, 'a graceful stop: Litestream’s final sync carries the last admission')

  const fromBackup = join(install.dir, 'standby-b', 'facility.db')
  t.match(await run(['restore', '--from', backup, '--to', fromBackup]), 'integrity ok, 2 ward occupants')
  t.same(occupantIds(fromBackup), ids.slice(0, 2).sort(), 'the backup’s two admissions, restored')
  t.equal(statSync(fromBackup).mode & 0o777, 0o600, 'the restored file is its user’s only')
  t.equal(statSync(dirname(fromBackup)).mode & 0o777, 0o700, 'so is the folder restore made')

  const fromReplica = join(install.dir, 'standby-r', 'facility.db')
  t.match(await run(['restore', '--from', replica, '--to', fromReplica]), 'integrity ok, 3 ward occupants')
  t.same(occupantIds(fromReplica), ids.sort(), 'every admission, restored from the replica')
  t.match(await run(['token', 'list', '--database', fromReplica]), /\tit\tadmin\t/, 'the restored database’s tokens')

  const help = await runExecutable(install, ['--help'])
  const listed = [...help.stdout.matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1]).filter((c) => c !== 'help')
  const elsewhere = ['serve', 'rollback'] // every release test serves; rollback.release.ts rolls back
  t.same(
    listed.filter((command) => !ran.has(command as string) && !elsewhere.includes(command as string)),
    [],
    'every command of --help was run from the executable',
  )
})

t.test('from the executable: mv data data.before under its running server, and restore refuses', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  const server = await serveExecutable(install) // ./data/facility.db, its default
  t.teardown(() => stopServer(server, 'SIGKILL'))
  const admin = join(install.dir, 'data', 'first-admin-token')
  const backup = join(install.dir, 'backup.db')
  t.equal((await runExecutable(install, ['backup', backup])).code, 0)
  t.ok(existsSync(admin))
  renameSync(join(install.dir, 'data'), join(install.dir, 'data.before'))

  const to = join(install.dir, 'data', 'facility.db')
  const refused = await runExecutable(install, ['restore', '--from', backup, '--to', to])
  t.equal(refused.code, 1)
  t.match(refused.stderr, `process ${server.child.pid} (facility-service) was started on ${to}`)
  t.match(refused.stderr, `or kill ${server.child.pid}), then restore`)
  t.notOk(existsSync(join(install.dir, 'data')), 'nothing was written')

  t.equal(await stopServer(server), 0)
  const done = await runExecutable(install, ['restore', '--from', backup, '--to', to])
  t.equal(done.code, 0, done.stderr)
  t.same(readdirSync(join(install.dir, 'data')), ['facility.db'])
})
