import { execFileSync, spawnSync } from 'node:child_process'
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { releaseBuild } from './helpers.js'

// The release's signature (scripts/release/sign.mjs) made with a throwaway key, as the release
// manager makes it with the real one, and checked the way docs/OPERATIONS.md tells a facility to.
const release = releaseBuild()

/** `sign.mjs <dir>` as the release manager runs it; its exit code and what it said. */
function sign(dir: string, key?: string) {
  const { RELEASE_SIGNING_KEY: _, ...inherited } = process.env
  const env = key === undefined ? inherited : { ...inherited, RELEASE_SIGNING_KEY: key }
  const run = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts/release/sign.mjs'), dir], {
    env,
    encoding: 'utf8',
  })
  return { code: run.status, said: `${run.stdout}${run.stderr}` }
}

/** A key pair made for this test only: its private half never leaves the test's folder. */
function throwawayKey(dir: string, name: string): { key: string; pub: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const key = join(dir, name)
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'release@facility-service', '-f', key])
  return { key, pub: readFileSync(`${key}.pub`, 'utf8').trim() }
}

/** The facility's check, word for word as docs/OPERATIONS.md gives it, in the download folder. */
function facilityCheck(dir: string): { verify: number | null; sums: number | null; said: string } {
  const verify = spawnSync(
    'sh',
    [
      '-c',
      'ssh-keygen -Y verify -f allowed_signers -I release@facility-service -n facility-service-release -s SHA256SUMS.sig < SHA256SUMS',
    ],
    { cwd: dir, encoding: 'utf8' },
  )
  const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: dir, encoding: 'utf8' })
  return { verify: verify.status, sums: sums.status, said: `${verify.stdout}${verify.stderr}` }
}

t.test('SHA256SUMS signed with the release key: the facility’s check passes, and fails on any change', async (t) => {
  const dir = t.testdir({ download: {} })
  const download = join(dir, 'download')
  for (const file of [release.executable, release.archive, release.sums])
    copyFileSync(file, join(download, basename(file)))

  const unsigned = sign(download)
  t.equal(unsigned.code, 1, 'no key, no signature')
  t.match(unsigned.said, /RELEASE_SIGNING_KEY is not set/)
  t.notOk(existsSync(join(download, 'SHA256SUMS.sig')))

  const { key, pub } = throwawayKey(join(dir, 'release-manager'), 'facility-service-release')
  const signed = sign(download, key)
  t.equal(signed.code, 0, signed.said)
  t.ok(existsSync(join(download, 'SHA256SUMS.sig')), 'SHA256SUMS.sig beside SHA256SUMS')
  // The facility's allowed_signers: the public key the README publishes, for this namespace only.
  writeFileSync(
    join(download, 'allowed_signers'),
    `release@facility-service namespaces="facility-service-release" ${pub}\n`,
  )
  const good = facilityCheck(download)
  t.same([good.verify, good.sums], [0, 0], `the signature and the checksums hold: ${good.said}`)
  t.match(good.said, /Good "facility-service-release" signature for release@facility-service/)

  // Someone who swaps the executable writes its checksum into SHA256SUMS too: the signature no longer holds.
  const sums = readFileSync(join(download, 'SHA256SUMS'), 'utf8')
  const exe = join(download, release.name)
  appendFileSync(exe, 'planted')
  const changedFile = facilityCheck(download)
  t.equal(changedFile.sums, 1, 'a changed executable fails its checksum')
  const swapped = sums.replace(/^[0-9a-f]{64}/, execFileSync('sha256sum', [exe], { encoding: 'utf8' }).slice(0, 64))
  writeFileSync(join(download, 'SHA256SUMS'), swapped)
  const forged = facilityCheck(download)
  t.equal(forged.sums, 0, 'the new list matches the changed file')
  t.not(forged.verify, 0, 'but its signature fails')

  // ...or signs the new list with a key of their own: not the one in allowed_signers.
  const theirs = throwawayKey(join(dir, 'someone-else'), 'key')
  t.equal(sign(download, theirs.key).code, 0)
  t.not(facilityCheck(download).verify, 0, 'a signature by another key fails')
})
