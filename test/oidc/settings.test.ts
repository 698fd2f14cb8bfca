import t from 'tap'
import { ConfigError, loadConfig } from '../../config.js'

// The sign-in settings are checked at the start, each refusal naming the variable and why.

const base = {
  OIDC_ISSUER: 'https://id.hospital.example/realms/ward',
  OIDC_AUDIENCE: 'ward-api',
  OIDC_ROLE_MAP: 'ward-nurse=write',
}

t.test('a complete setting is read', async (t) => {
  const config = loadConfig({ ...base, OIDC_ALLOW_UNBOUND: 'true', OIDC_CLOCK_SKEW_SECONDS: '10' })
  t.match(config, {
    OIDC_ALLOW_UNBOUND: true,
    OIDC_CLOCK_SKEW_SECONDS: 10,
    OIDC_ALGORITHMS: 'RS256,PS256,ES256',
    OIDC_MAX_TOKEN_LIFETIME_SECONDS: 86_400,
  })
  t.equal(loadConfig({}).OIDC_ISSUER, '', 'off by default')
  for (const issuer of ['http://127.0.0.1:8080', 'http://localhost:8080/realms/ward', 'http://[::1]:8080'])
    t.equal(loadConfig({ ...base, OIDC_ISSUER: issuer }).OIDC_ISSUER, issuer, `plain http on this machine: ${issuer}`)
})

t.test('refused settings', async (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ ...base, OIDC_AUDIENCE: '' }, /OIDC_AUDIENCE="": is required with OIDC_ISSUER/],
    [{ ...base, OIDC_ROLE_MAP: '' }, /OIDC_ROLE_MAP="": is required/],
    [
      { ...base, OIDC_ROLE_MAP: 'nurse=root' },
      /OIDC_ROLE_MAP="nurse=root": "nurse=root" is not name=read\|write\|admin/,
    ],
    [{ ...base, OIDC_ALGORITHMS: 'RS256,none' }, /OIDC_ALGORITHMS="RS256,none": none refused/],
    [{ ...base, OIDC_ALGORITHMS: 'HS256' }, /HS256 refused: only .* never an HMAC/],
    [{ ...base, OIDC_ALGORITHMS: ' , ' }, /names no algorithm/],
    [{ ...base, OIDC_ISSUER: 'not a url' }, /OIDC_ISSUER="not a url": is not a URL/],
    [{ ...base, OIDC_ISSUER: 'http://id.hospital.example/realms/ward' }, /OIDC_ISSUER=.*: must be https/],
    [{ ...base, OIDC_ISSUER: 'ftp://id.hospital.example/' }, /OIDC_ISSUER=.*: must be https/],
    [{ ...base, OIDC_BOARD_CLIENT_ID: 'ward-api' }, /OIDC_BOARD_CLIENT_ID="ward-api": must not be OIDC_AUDIENCE/],
    [{ OIDC_AUDIENCE: 'ward-api' }, /OIDC_AUDIENCE="ward-api": is only read with OIDC_ISSUER set/],
    [{ ...base, OIDC_CLOCK_SKEW_SECONDS: '3600' }, /OIDC_CLOCK_SKEW_SECONDS/],
    [{ ...base, OIDC_MAX_TOKEN_LIFETIME_SECONDS: '0' }, /OIDC_MAX_TOKEN_LIFETIME_SECONDS/],
    [{ ...base, OIDC_KEY_MAX_AGE_SECONDS: '10' }, /OIDC_KEY_MAX_AGE_SECONDS/],
    [{ ...base, OIDC_ACCOUNT_CLAIM: ' , ' }, /OIDC_ACCOUNT_CLAIM=" , ": names no claim/],
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), ConfigError)
    try {
      loadConfig(env)
    } catch (error) {
      t.match((error as Error).message, message)
    }
  }
})
