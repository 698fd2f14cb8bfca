#!/usr/bin/env node
// The release's signature: SHA256SUMS signed with the release manager's SSH key (`ssh-keygen -Y
// sign`), written beside it as SHA256SUMS.sig. SHA256SUMS travels with the files it vouches for, so
// alone it proves only that a download is whole; the signature proves who made the list. A facility
// checks it with `ssh-keygen -Y verify` and the project's public key (docs/OPERATIONS.md, "Install").
//
//   RELEASE_SIGNING_KEY=~/keys/facility-service-release node scripts/release/sign.mjs [dir]
//
// RELEASE_SIGNING_KEY names the private key file (or its .pub, with the private key in ssh-agent).
// No key is ever in this repository; without one this script refuses, and `npm run release` makes
// an unsigned build for testing (and says so), never a signature with some other key.
import { execFileSync } from 'node:child_process'
import { existsSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The namespace the signature is made for: a signature for anything else (git, a login) is not one of these. */
export const SIGNATURE_NAMESPACE = 'facility-service-release'
export const SUMS = 'SHA256SUMS'
export const SIGNATURE = `${SUMS}.sig`

/** Signs dir/SHA256SUMS with the key file; replaces an earlier signature. */
export function signSums(dir, keyFile) {
  if (!keyFile) throw new Error('RELEASE_SIGNING_KEY is not set: it must name the release signing key file')
  if (!existsSync(keyFile)) throw new Error(`RELEASE_SIGNING_KEY: no key file at ${keyFile}`)
  const sums = join(dir, SUMS)
  if (!existsSync(sums)) throw new Error(`no ${sums} to sign: build the release first (npm run release)`)
  rmSync(`${sums}.sig`, { force: true })
  // stdin inherited: ssh-keygen asks there for the key's passphrase.
  execFileSync('ssh-keygen', ['-q', '-Y', 'sign', '-f', keyFile, '-n', SIGNATURE_NAMESPACE, sums], {
    stdio: ['inherit', 'ignore', 'inherit'],
  })
  return `${sums}.sig`
}

/** After a build: signs when the release manager's key is given, else removes a stale signature. */
export function signOrSayUnsigned(dir, keyFile, log) {
  if (keyFile) {
    log(`signed: ${signSums(dir, keyFile)}`)
    return true
  }
  rmSync(join(dir, SIGNATURE), { force: true })
  log(`${SUMS} is not signed (no RELEASE_SIGNING_KEY): a build to test, not a release to publish`)
  return false
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = resolve(process.argv[2] ?? join(fileURLToPath(new URL('.', import.meta.url)), '../../release'))
  try {
    console.log(`signed: ${signSums(dir, process.env.RELEASE_SIGNING_KEY)}`)
  } catch (error) {
    console.error(`sign: ${error.message}`)
    process.exit(1)
  }
}
