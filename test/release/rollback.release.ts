import { execFileSync } from 'node:child_process'
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { latestVersion } from '../../db/migrations.js'
import { schemaVersionOf } from '../../db/pre-migration-copy.js'
import { type ServerProcess, stopServer } from '../reliability/server-process.js'
import { installAlone, oldBuild, releaseBuild, runExecutable, runOld, serveExecutable, serveOld } from './helpers.js'

const release = releaseBuild()

async function admit(server: ServerProcess, token: string, bed: string) {
  const res = await fetch(`${server.base}/ward-occupants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ encounter: `e-${bed}`, bed, occupiedBy: `p-${bed}` }),
  })
  return res.status
}

async function beds(server: ServerProcess, token: string): Promise<string[]> {
  const res = await fetch(`${server.base}/ward-occupants`, { headers: { authorization: `Bearer ${token}` } })
  return ((await res.json()) as { wardOccupants: { bed: string }[] }).wardOccupants.map((o) => o.bed)
}

// An upgrade that migrates, and its rollback, as OPERATIONS.md tells a facility: the new
// executable keeps <database>.before-<version> before it migrates; rolling back is the old build
// on that copy. The old build is the newest earlier commit of this repository with fewer migrations.
t.test(
  'upgrade to this executable, then roll back: the old build runs on the copy kept before migrating',
  async (t) => {
    const dir = t.testdir({ old: {}, facility: {} })
    const old = oldBuild(join(dir, 'old'))
    t.comment(`old build: ${old.commit.slice(0, 10)} (schema ${old.schema}); this one: schema ${latestVersion()}`)
    const install = installAlone(join(dir, 'facility'), release.executable)
    const database = join(install.dir, 'data', 'facility.db')

    const created = runOld(old, ['token', 'create', '--account', 'it', '--role', 'admin', '--database', database])
    const token = created.trim().split('\n').at(-1) as string
    const before = await serveOld(old, database)
    t.equal(await admit(before, token, 'B-before'), 200, 'the old build serves the ward')
    t.equal(await stopServer(before), 0)

    const upgraded = await serveExecutable(install)
    const copy = `${database}.before-${release.version}`
    t.match(upgraded.output(), `kept a consistent copy of the database in ${copy}`, 'the copy is logged')
    t.equal(statSync(copy).mode & 0o777, 0o600, 'the copy is the service user’s only')
    t.equal(schemaVersionOf(copy), old.schema, 'the copy holds the old schema')
    t.equal(await admit(upgraded, token, 'B-after'), 200, 'the upgraded executable serves the migrated database')
    t.same((await beds(upgraded, token)).sort(), ['B-after', 'B-before'])
    const tooSoon = await runExecutable(install, ['rollback'])
    t.match(
      tooSoon,
      { code: 1, stderr: /is open in process \d+: stop the service first/ },
      'never under a running server',
    )
    t.equal(await stopServer(upgraded), 0)

    await t.rejects(serveOld(old, database), /newer than this build/, 'the old build refuses the migrated file')

    // Roll back with the executable's own command: the copy back in place (the migrated file kept
    // beside it), and the previous executable that `install -b -S .previous` left back in place.
    writeFileSync(`${install.exe}.previous`, '#!/bin/sh\necho the previous executable\n', { mode: 0o755 })
    const rollback = await runExecutable(install, ['rollback'])
    t.equal(rollback.code, 0, rollback.stderr)
    t.equal(execFileSync(install.exe, { encoding: 'utf8' }), 'the previous executable\n', 'the previous file is back')
    t.equal(schemaVersionOf(`${database}.after-${release.version}`), latestVersion(), 'the migrated file is kept')
    const rolledBack = await serveOld(old, database)
    t.same(
      await beds(rolledBack, token),
      ['B-before'],
      'the old build on the copy: the ward as it was before the upgrade',
    )
    t.equal(await stopServer(rolledBack), 0)
  },
)
