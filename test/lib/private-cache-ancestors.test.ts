import { execFile } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import t from 'tap'
import { checkAncestors, privateDirectory, sha256, useVerifiedFile } from '../../lib/private-cache.js'
import { PROJECT_ROOT } from '../../lib/product-files.js'

// The executable's private cache (lib/private-cache.ts) against another local user: the directories
// above it, the creation of it, and the file loaded from it. These tests run as root (CI does):
// another user's directory is made with chown to nobody.
const NOBODY = 65534
const root = process.getuid?.() === 0
const skip = root ? false : 'needs root to give a directory to another user (CI runs as root)'

t.test('a directory above the cache that another user owns is refused', { skip }, async (t) => {
  const dir = t.testdir()
  const theirs = join(dir, 'home-of-nobody')
  mkdirSync(theirs, { mode: 0o755 })
  chownSync(theirs, NOBODY, NOBODY)
  // Whoever owns it could rename `.cache` away after the check and put another in its place.
  t.throws(
    () => privateDirectory(join(theirs, '.cache', 'facility-service')),
    new RegExp(`${theirs} belongs to uid ${NOBODY}, not to root or this user .*every directory above the cache`),
  )
  t.notOk(existsSync(join(theirs, '.cache')), 'nothing was made in it')
  const through = join(dir, 'link-to-theirs')
  symlinkSync(theirs, through)
  mkdirSync(join(theirs, '.cache'), { mode: 0o700 })
  t.throws(() => checkAncestors(join(through, '.cache')), /belongs to uid 65534/, 'also behind a symbolic link')
})

t.test('a directory above it that others may write is refused, unless it is sticky like /tmp', async (t) => {
  const dir = t.testdir()
  const shared = join(dir, 'shared')
  mkdirSync(shared)
  chmodSync(shared, 0o777)
  t.throws(
    () => privateDirectory(join(shared, 'cache')),
    new RegExp(`${shared} has mode 777, writable by others and not sticky`),
  )
  const sticky = join(dir, 'sticky')
  mkdirSync(sticky)
  chmodSync(sticky, 0o1777)
  t.doesNotThrow(() => privateDirectory(join(sticky, 'cache', 'facility-service')), 'sticky: others cannot rename it')
  const group = join(dir, 'group')
  mkdirSync(group)
  chmodSync(group, 0o775)
  t.throws(() => checkAncestors(group), /has mode 775, writable by others/)
})

t.test('HOME=/proc: the cache cannot be made there, and that is said at once (no endless mkdir)', async (t) => {
  const script =
    "import('./lib/private-cache.ts').then((m) => m.privateDirectory(m.privateCachePath({ HOME: '/proc' })))"
  // The kill only ends a hang (the old code spun at 100 % CPU for ever), inside tap's own timeout
  // for the file; no time is asserted. Started asynchronously, so tap keeps running meanwhile.
  const run = await new Promise<{ signal: string | null; status: number | null; stderr: string }>((resolve) => {
    const child = execFile(process.execPath, ['--import=tsx', '-e', script], {
      cwd: PROJECT_ROOT,
      timeout: 25_000,
      killSignal: 'SIGKILL',
    })
    let stderr = ''
    child.stderr?.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('exit', (status, signal) => resolve({ status, signal, stderr }))
  })
  t.equal(run.signal, null, 'it ended by itself')
  t.equal(run.status, 1)
  t.match(
    run.stderr,
    /cannot create the cache directory \/proc\/\.cache \(ENOENT\): set CACHE_DIRECTORY or XDG_CACHE_HOME/,
  )
})

t.test(
  'the addon loaded is the file checked, even when another is renamed over its name after the check',
  async (t) => {
    const addon = join(
      dirname(createRequire(import.meta.url).resolve('better-sqlite3/package.json')),
      'prebuilds',
      'linux-x64.node',
    )
    const cache = privateDirectory(join(t.testdir(), 'cache'))
    const file = join(cache, 'better_sqlite3.node')
    copyFileSync(addon, file)
    chmodSync(file, 0o500)
    const sum = sha256(readFileSync(file))
    const planted = join(cache, 'planted.node')
    writeFileSync(planted, 'not an addon: loading this would fail')

    const loaded = useVerifiedFile(file, sum, function swapThenLoad(path) {
      renameSync(planted, file) // between the check and the load
      const module = { exports: {} as Record<string, unknown> }
      process.dlopen(module, path)
      return module.exports
    })
    t.equal(typeof loaded.Database, 'function', 'better-sqlite3’s addon, the checked file, was loaded')
    t.equal(
      readFileSync(file, 'utf8'),
      'not an addon: loading this would fail',
      'the name held the swapped file by then',
    )
  },
)

t.test('a file others may write, or a symbolic link, is not loaded', async (t) => {
  const cache = privateDirectory(join(t.testdir(), 'cache'))
  const file = join(cache, 'a.node')
  writeFileSync(file, 'x', { mode: 0o600 })
  chmodSync(file, 0o666)
  const read = (path: string) => readFileSync(path, 'utf8')
  t.throws(
    () => useVerifiedFile(file, sha256(Buffer.from('x')), read),
    /not a file of this user's that only it may write/,
  )
  symlinkSync(file, join(cache, 'link.node'))
  t.throws(() => useVerifiedFile(join(cache, 'link.node'), sha256(Buffer.from('x')), read), /ELOOP/)
})
