import { spawn } from 'node:child_process'
import { chmodSync, existsSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'
import { openDatabase } from '../../db/connection.js'
import { readAsNobody } from '../as-nobody.js'
import { dirRemovedLast } from '../helper.js'
import { listening, stopServer } from '../reliability/server-process.js'
import { withUmask } from '../umask.js'

const modeOf = (path: string) => statSync(path).mode & 0o7777
const asAnotherUser = process.getuid?.() === 0 ? {} : { skip: 'reading as another user needs root to switch to it' }

for (const mask of [0o000, 0o022]) {
  t.test(
    `umask ${mask.toString(8).padStart(3, '0')}: a new database, its WAL and shared memory are 0600 in a 0700 directory`,
    async (t) => {
      const data = join(t.testdir(), 'data')
      const path = join(data, 'facility.db')
      const db = withUmask(mask, () => openDatabase(path))
      t.teardown(() => db.close())
      db.exec('CREATE TABLE probe (x); INSERT INTO probe VALUES (1)')
      t.equal(modeOf(data), 0o700, 'the data directory')
      for (const file of [path, `${path}-wal`, `${path}-shm`]) {
        t.ok(existsSync(file), `${basename(file)} exists`)
        t.equal(modeOf(file), 0o600, `${basename(file)}: the service user only`)
      }
    },
  )
}

t.test(
  'another local user cannot read the database or its WAL, even in a directory opened up',
  asAnotherUser,
  async (t) => {
    const data = join(t.testdir(), 'data')
    const path = join(data, 'facility.db')
    const db = withUmask(0o000, () => openDatabase(path))
    t.teardown(() => db.close())
    db.exec("CREATE TABLE secret (x); INSERT INTO secret VALUES ('patient')")
    // The directory's 0700 alone would stop them; opened, the files' own modes must.
    chmodSync(data, 0o755)
    for (const file of [path, `${path}-wal`, `${path}-shm`]) t.equal(readAsNobody(file), 'EACCES', file)
  },
)

t.test('an existing database keeps the mode its owner gave it', async (t) => {
  const dir = t.testdir({ 'shared.db': '' })
  const path = join(dir, 'shared.db')
  chmodSync(path, 0o640)
  const db = openDatabase(path)
  db.close()
  t.equal(modeOf(path), 0o640, 'not changed behind the owner')
})

t.test(
  'npm start under umask 022: data directory 0700; database, WAL, shared memory and token file 0600',
  async (t) => {
    const data = join(t.testdir(), 'data')
    const path = join(data, 'facility.db')
    // The shell's umask, as a service manager or a login shell would hand it to `npm start`.
    const child = spawn('sh', ['-c', 'umask 022; exec "$0" --import=tsx server.ts', process.execPath], {
      env: { ...process.env, DATABASE_PATH: path, PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const server = await listening(child)
    t.teardown(() => stopServer(server))
    t.equal(modeOf(data), 0o700, 'data directory')
    for (const file of [path, `${path}-wal`, `${path}-shm`, join(data, 'first-admin-token')])
      t.equal(modeOf(file), 0o600, file)
  },
)

t.test('with REPLICA_URL, whose settings file is written first, the data directory is made 0700 too', async (t) => {
  const root = dirRemovedLast(t, 'private-files')
  const data = join(root, 'data')
  const path = join(data, 'facility.db')
  const before = process.umask(0o022)
  const app = await buildApp(
    defaultConfig({ DATABASE_PATH: path, REPLICA_URL: join(root, 'replica'), LOG_LEVEL: 'silent' }),
  ).finally(() => process.umask(before))
  t.teardown(() => app.close())
  t.equal(modeOf(data), 0o700, 'data directory')
  for (const file of [path, `${path}.litestream.yml`]) t.equal(modeOf(file), 0o600, basename(file))
})
