import { chmodSync, chownSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import t from 'tap'
import {
  createPrivateFile,
  makePrivateDirectory,
  temporaryName,
  unsafeDirectoryReason,
} from '../../lib/private-files.js'
import { NOBODY } from '../as-nobody.js'
import { withUmask } from '../umask.js'

const modeOf = (path: string) => statSync(path).mode & 0o7777
const isRoot = process.getuid?.() === 0
// Giving a file to another user needs root; the tests and CI run as root.
const needsRoot = isRoot ? {} : { skip: 'giving a directory to another user needs root' }

for (const mask of [0o000, 0o022, 0o277]) {
  t.test(`under umask ${mask.toString(8).padStart(3, '0')}: files 0600, directories 0700`, async (t) => {
    const dir = t.testdir()
    const nested = join(dir, 'a', 'b')
    withUmask(mask, () => {
      makePrivateDirectory(nested)
      createPrivateFile(join(nested, 'f'))
    })
    t.equal(modeOf(join(dir, 'a')), 0o700, 'each directory made is 0700')
    t.equal(modeOf(nested), 0o700)
    t.equal(modeOf(dir), 0o755, 'a directory that was there keeps its mode')
    t.equal(modeOf(join(nested, 'f')), 0o600, 'the file is 0600 from its creation, whatever the umask')
    t.equal(statSync(join(nested, 'f')).size, 0)
  })
}

t.test('a file is never created through a link or over an existing file', async (t) => {
  const dir = t.testdir({ victim: 'their data', existing: 'mine' })
  const victim = join(dir, 'victim')
  symlinkSync(victim, join(dir, 'planted'))
  t.throws(() => createPrivateFile(join(dir, 'planted')), { code: /EEXIST|ELOOP/ }, 'a link at the name is refused')
  t.equal(readFileSync(victim, 'utf8'), 'their data', 'and its target is untouched')
  t.throws(() => createPrivateFile(join(dir, 'existing')), { code: 'EEXIST' })
  t.equal(readFileSync(join(dir, 'existing'), 'utf8'), 'mine')
})

t.test('temporary names are hidden, beside the final name, and not guessable', async (t) => {
  const names = new Set(Array.from({ length: 100 }, () => temporaryName('/srv/b', 'facility-1.db')))
  t.equal(names.size, 100, 'no two alike')
  for (const name of names) {
    t.equal(dirname(name), '/srv/b')
    t.match(basename(name), /^\.facility-1\.db\.[0-9a-f]{24}\.partial$/)
  }
})

t.test(
  'a private directory: refused when a link, another owner, open to writes, or under an open parent',
  async (t) => {
    const dir = t.testdir({ parent: { own: {} }, elsewhere: {} })
    const own = join(dir, 'parent', 'own')
    chmodSync(own, 0o700)
    t.equal(unsafeDirectoryReason(own), null, "the service user's own 0700 directory")
    chmodSync(own, 0o755)
    t.equal(unsafeDirectoryReason(own), null, 'readable by others is allowed: the files in it are 0600')

    const link = join(dir, 'link')
    symlinkSync(join(dir, 'elsewhere'), link)
    t.match(unsafeDirectoryReason(link), /symbolic link/)

    for (const mode of [0o775, 0o757, 0o777]) {
      chmodSync(own, mode)
      t.match(unsafeDirectoryReason(own), /writable by others/, `mode ${mode.toString(8)}`)
    }
    chmodSync(own, 0o700)

    const parent = join(dir, 'parent')
    chmodSync(parent, 0o777)
    t.match(unsafeDirectoryReason(own), /parent .* writable by others/, 'others could move it away and put another')
    chmodSync(parent, 0o1777)
    t.equal(unsafeDirectoryReason(own), null, 'a sticky parent (like /tmp) lets nobody else move it')
    chmodSync(parent, 0o755)

    const file = join(dir, 'file')
    writeFileSync(file, '')
    t.match(unsafeDirectoryReason(file), /not a directory/)
    t.throws(() => unsafeDirectoryReason(join(dir, 'missing')), { code: 'ENOENT' })
  },
)

t.test('a directory or parent of another user is refused', needsRoot, async (t) => {
  const dir = t.testdir({ theirs: { inside: {} }, mine: {} })
  const theirs = join(dir, 'theirs')
  chownSync(join(dir, 'mine'), NOBODY, NOBODY)
  chmodSync(join(dir, 'mine'), 0o700)
  t.match(unsafeDirectoryReason(join(dir, 'mine')), /belongs to uid 65534, not to the service's user/)
  chownSync(theirs, NOBODY, NOBODY)
  mkdirSync(join(theirs, 'deeper'))
  t.match(unsafeDirectoryReason(join(theirs, 'deeper')), /parent .*theirs belongs to uid 65534/)
  // The resolved path is checked too: a link in a safe place to a directory of another user's.
  symlinkSync(theirs, join(dir, 'alias'))
  t.match(unsafeDirectoryReason(join(dir, 'alias', 'deeper')), /parent .*theirs belongs to uid 65534/)
})
