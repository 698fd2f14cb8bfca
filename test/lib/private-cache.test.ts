import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { insideExecutable } from '../../lib/executable.js'
import {
  checkPrivate,
  privateCachePath,
  privateDirectory,
  sha256,
  useVerifiedFile,
  writeVerified,
} from '../../lib/private-cache.js'
import { PROJECT_ROOT, productPath, productText, productVersion } from '../../lib/product-files.js'

t.test('where the cache is: systemd’s, then XDG’s, then the home folder’s', async (t) => {
  t.equal(
    privateCachePath({ CACHE_DIRECTORY: '/var/cache/fs:/other', XDG_CACHE_HOME: '/x', HOME: '/h' }),
    '/var/cache/fs',
  )
  t.equal(privateCachePath({ XDG_CACHE_HOME: '/x', HOME: '/h' }), '/x/facility-service')
  t.equal(privateCachePath({ HOME: '/h' }), '/h/.cache/facility-service')
  t.throws(
    () => privateCachePath({ XDG_CACHE_HOME: 'relative' }),
    /not an absolute path: set CACHE_DIRECTORY or XDG_CACHE_HOME/,
  )
})

t.test('only a directory of this user’s own, closed to others, is used', async (t) => {
  const dir = t.testdir()
  const made = privateDirectory(join(dir, 'a', 'b'))
  t.equal(statSync(made).mode & 0o777, 0o700, 'made with mode 0700')
  const open = join(dir, 'open')
  mkdirSync(open, { mode: 0o755 })
  chmodSync(open, 0o755)
  t.throws(() => checkPrivate(open), /has mode 755; it must be 700 .*chmod 700/)
  symlinkSync(made, join(dir, 'link'))
  t.throws(() => checkPrivate(join(dir, 'link')), /is not a directory \(a symbolic link is refused\)/)
})

t.test('a file is written once, replaced when it changed, never written from bytes that do not match', async (t) => {
  const file = join(t.testdir(), 'addon.node')
  const bytes = Buffer.from('the addon')
  const sum = sha256(bytes)
  writeVerified(file, bytes, sum, 0o500)
  t.equal(statSync(file).mode & 0o777, 0o500)
  const { ino } = statSync(file)
  writeVerified(file, bytes, sum, 0o500)
  t.equal(statSync(file).ino, ino, 'kept as it is when it matches')
  chmodSync(file, 0o600)
  writeFileSync(file, 'tampered')
  const read = (path: string) => readFileSync(path, 'utf8')
  t.throws(() => useVerifiedFile(file, sum, read), /has checksum .*, not the build's .*; it was not loaded/)
  writeVerified(file, bytes, sum, 0o500)
  t.equal(readFileSync(file, 'utf8'), 'the addon', 'replaced')
  t.equal(useVerifiedFile(file, sum, read), 'the addon')
  t.throws(() => writeVerified(`${file}.new`, Buffer.from('other'), sum, 0o500), /does not match its build checksum/)
})

t.test('outside the executable the product’s files are the project’s', async (t) => {
  t.equal(insideExecutable(), false)
  t.equal(productPath('public/board'), join(PROJECT_ROOT, 'public/board'))
  t.match(productText('schema.sql'), /^-- migration 1:/m)
  t.equal(productVersion(), JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).version)
})
