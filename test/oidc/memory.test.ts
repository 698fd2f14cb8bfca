import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { parseRoleMap } from '../../domain/claims.js'
import { ProviderKeys } from '../../plugins/auth/key-set.js'
import { createProviderTokens } from '../../plugins/auth/provider-tokens.js'
import { newKey, publicJwk, startProvider } from './provider.js'

// Verified tokens are remembered until they expire, never past: the clock is passed in, so the
// expiry is tested without waiting for it.

/** The verifier as the plugin makes it, over these keys, remembering `memory` tokens. */
function tokensOf(keys: ProviderKeys, issuer: string, memory: number) {
  return createProviderTokens(keys, {
    issuer,
    audience: 'api://ward',
    algorithms: ['RS256'],
    clockSkewSeconds: 30,
    maxLifetimeSeconds: 86_400,
    memory,
    rules: {
      accountClaims: ['sub'],
      roleClaim: 'roles',
      roleMap: parseRoleMap('nurse=write'),
      facilityClaim: 'facility',
      allowUnbound: false,
    },
  })
}

t.test('a remembered token is refused once it expires; the memory is bounded', async (t) => {
  const provider = await startProvider({ keys: [await newKey('k')] })
  await provider.close()
  const file = join(mkdtempSync(join(tmpdir(), 'memory-')), 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: provider.keys.map(publicJwk) }))
  const keys = new ProviderKeys({ issuer: provider.issuer, file })
  await keys.refresh()
  let lookups = 0
  const keyFor = keys.keyFor.bind(keys)
  keys.keyFor = (...args) => {
    lookups++
    return keyFor(...args)
  }
  const tokens = tokensOf(keys, provider.issuer, 2)
  const now = Date.now()
  const token = await provider.sign({ sub: 'ann', roles: ['nurse'], facility: 'A', exp: Math.floor(now / 1000) + 60 })
  t.same(await tokens.check(token, now), {
    ok: true,
    principal: { account: 'oidc:ann', tokenId: 'oidc:ann', role: 'write', facility: 'A', scopes: [] },
    expiresAt: (Math.floor(now / 1000) + 60) * 1000,
  })
  t.match(await tokens.check(token, now + 1000), { ok: true })
  t.equal(lookups, 1, 'the second check is answered from memory')
  t.match(tokens.session('oidc:ann', now), { expiresAt: (Math.floor(now / 1000) + 60) * 1000 })
  t.match(await tokens.check(token, now + 60_000 + 31_000), { ok: false, status: 401, message: /expired/ })
  t.equal(tokens.session('oidc:ann', now + 91_000), undefined, 'the session ends with its last token')

  // Two remembered at most: a third pushes the oldest out, which is then verified again.
  const others = [] as string[]
  for (const sub of ['b', 'c']) others.push(await provider.sign({ sub, roles: ['nurse'], facility: 'A' }))
  for (const other of others) await tokens.check(other, now)
  const before = lookups
  await tokens.check(token, now)
  t.equal(lookups, before + 1, 'evicted, verified again')
})

/**
 * Ann's token, verified with a key the provider then withdraws (the file no longer holds it). Every
 * key set is past its age at once: the next check asks for it again, in the background; `until`
 * checks until `done` or ten seconds, answering how many checks it took.
 */
async function withdrawnAfterUse(t: Test) {
  const [withdrawn, kept] = [await newKey('withdrawn'), await newKey('kept')]
  const provider = await startProvider({ keys: [withdrawn, kept] })
  await provider.close()
  const file = join(mkdtempSync(join(tmpdir(), 'memory-')), 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: provider.keys.map(publicJwk) }))
  const keys = new ProviderKeys({ issuer: provider.issuer, file, maxAgeMs: 0, cooldownMs: 0 })
  await keys.refresh()
  const tokens = tokensOf(keys, provider.issuer, 10)
  const token = await provider.sign({ sub: 'ann', roles: ['nurse'], facility: 'A' }, { key: withdrawn })
  t.match(await tokens.check(token), { ok: true })
  writeFileSync(file, JSON.stringify({ keys: [publicJwk(kept)] }))
  async function until(done: () => Promise<boolean> | boolean): Promise<number> {
    let checks = 0
    for (const end = Date.now() + 10_000; Date.now() < end && !(await done()); checks++)
      await new Promise((resolve) => setTimeout(resolve, 20))
    return checks
  }
  return { tokens, token, until }
}

t.test('keys past their age are fetched again on a remembered token too: a withdrawn key stops counting', async (t) => {
  const { tokens, token, until } = await withdrawnAfterUse(t)
  // The check that finds the keys old starts the read; one of the next ones sees its result.
  const checks = await until(async () => !(await tokens.check(token)).ok)
  t.match(await tokens.check(token), { ok: false, status: 401, message: /kid/ }, `refused after ${checks} checks`)
})

t.test('keys past their age are fetched again for an open stream too: no token needed to end it', async (t) => {
  const { tokens, until } = await withdrawnAfterUse(t)
  // Only the feed's checks of her open stream and tickets from now on (feed/index.ts), no token.
  const checks = await until(() => tokens.session('oidc:ann') === undefined)
  t.equal(tokens.session('oidc:ann'), undefined, `the session ends after ${checks} checks`)
})
