// Provider tokens for the bench: what a hospital's identity provider would issue, signed with a key
// whose public half the service reads from OIDC_JWKS_FILE (the verification is the same as for keys
// fetched from a provider; the fetch happens once at the start and is not what the bench measures).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'

const ISSUER = 'https://id.bench.example/realms/ward'
const AUDIENCE = 'ward-api'

/** The service's OIDC_* settings and one nurse's token per facility, valid for `hours`. */
export async function providerTokens(workdir, facilities, hours = 2) {
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }
  const file = join(workdir, 'jwks.json')
  writeFileSync(file, JSON.stringify({ keys: [jwk] }))
  const now = Math.floor(Date.now() / 1000)
  const tokens = []
  for (const facility of facilities) {
    tokens.push(
      await new SignJWT({ sub: `bench-nurse-${facility}`, roles: ['ward-nurse'], facility })
        .setProtectedHeader({ alg: 'RS256', kid: 'bench', typ: 'at+jwt' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(now)
        .setExpirationTime(now + hours * 3600)
        .sign(privateKey),
    )
  }
  const env = {
    OIDC_ISSUER: ISSUER,
    OIDC_AUDIENCE: AUDIENCE,
    OIDC_JWKS_FILE: file,
    OIDC_ROLE_CLAIM: 'roles',
    OIDC_ROLE_MAP: 'ward-nurse=write',
  }
  return { env, tokens }
}

/** The note the report carries: a provider token's get-by-id against a service token's, same run. */
export function providerNote(results) {
  const of = (key) => results.find((r) => r.scenario.key === key)?.result
  const service = of('get')
  const provider = of('get-oidc')
  if (!service?.rps || !provider?.rps) return null
  const ratio = provider.rps / service.rps
  const met = ratio >= 0.9 ? 'met' : '**not met**'
  return `get by id with a provider token: ${Math.round(provider.rps)} req/s, ${(ratio * 100).toFixed(1)} % of the same with a service token (${Math.round(service.rps)} req/s; goal ≥ 90 %: ${met})`
}
