import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { parseRoleMap } from '../../domain/claims.js'
import { ProviderKeys } from '../../plugins/auth/key-set.js'
import { createProviderTokens } from '../../plugins/auth/provider-tokens.js'
import { newKey, publicJwk, startProvider } from './provider.js'

// Verified tokens are remembered until they expire, never past: the clock is passed in, so the
// expiry is tested without waiting for it.

t.test('a remembered token is refused once it expires; the memory is bounded', async (t) => {
  const provider = await startProvider({ keys: [await newKey('k')] })
  await provider.close()
  const file = join(mkdtempSync(join(tmpdir(), 'memory-')), 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: provider.keys.map(publicJwk) }))
  const keys = new ProviderKeys({ issuer: provider.issuer, file })
  await keys.refresh()
  let lookups = 0
  const counting = Object.assign(Object.create(keys), {
    getKey: (...args: Parameters<ProviderKeys['getKey']>) => {
      lookups++
      return keys.getKey(...args)
    },
  }) as ProviderKeys
  const tokens = createProviderTokens(counting, {
    issuer: provider.issuer,
    audience: 'api://ward',
    algorithms: ['RS256'],
    clockSkewSeconds: 30,
    maxLifetimeSeconds: 86_400,
    memory: 2,
    rules: {
      accountClaim: 'sub',
      roleClaim: 'roles',
      roleMap: parseRoleMap('nurse=write'),
      facilityClaim: 'facility',
      allowUnbound: false,
    },
  })
  const now = Date.now()
  const token = await provider.sign({ sub: 'ann', roles: ['nurse'], facility: 'A', exp: Math.floor(now / 1000) + 60 })
  t.same(await tokens.check(token, now), {
    ok: true,
    principal: { account: 'oidc:ann', tokenId: 'oidc:ann', role: 'write', facility: 'A' },
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
