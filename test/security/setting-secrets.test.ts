import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig, loadConfig } from '../../config.js'
import { readReplicaExtras } from '../../db/replication/litestream-config.js'
import { parseReplicaUrl, shownReplicaUrl } from '../../lib/replica-url.js'
import { propertyRuns } from '../property-runs.js'

/**
 * No setting's secret appears in a message (docs/SECURITY.md): not in a refused configuration, not
 * in the URL the server logs, not in an error about a line of REPLICA_CONFIG. Secrets are drawn
 * with the characters that broke the old masks (`/`, `@`, `:`, `%`, as AWS secret keys and
 * generated passwords hold), and a message leaks when it holds the secret, its encoded or decoded
 * form, or any 8 characters in a row of one of them.
 */

// Upper case, digits and the awkward characters: the service's messages are mostly lower case, so a
// window of 8 found in one came from the secret, not from a word that happens to be there too.
const SECRET_CHARS = [...'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789/@:%+=']
const secretArbitrary = fc
  .array(fc.constantFrom(...SECRET_CHARS), { minLength: 12, maxLength: 40 })
  .map((chars) => chars.join(''))
  // At least one character the old masks stopped at, so every run tries what broke them.
  .filter((secret) => /[/@:%]/.test(secret))

function decoded(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The first 8-character window of the secret (as drawn, encoded or decoded) found in `text`. */
function leakIn(text: string, secret: string): string | null {
  for (const form of new Set([secret, encodeURIComponent(secret), decoded(secret)])) {
    const width = Math.min(8, form.length)
    for (let i = 0; i + width <= form.length; i++) {
      const window = form.slice(i, i + width)
      if (text.includes(window)) return window
    }
  }
  return null
}

function messageOf(action: () => unknown): string | null {
  try {
    action()
    return null
  } catch (error) {
    return (error as Error).message
  }
}

/** The ways a person writes a secret into REPLICA_URL, well and badly. */
function replicaUrls(secret: string): string[] {
  const encoded = encodeURIComponent(secret)
  return [
    `sftp://repl:${secret}@standby.ward/replicas/facility`,
    `sftp://repl:${encoded}@standby.ward/replicas/facility`,
    `sftp://repl:${secret}@standby.ward:2222/replicas/facility`,
    `s3://KEY:${secret}@bucket/facility`,
    `s3://bucket/facility?secret-access-key=${encoded}`,
    `ftp://repl:${secret}@standby.ward/replica`,
    `sftp://repl:${secret}@`,
  ]
}

t.test('REPLICA_URL: neither a refusal nor the URL the server logs holds any 8 characters of its secret', async (t) => {
  let refused = 0
  fc.assert(
    fc.property(secretArbitrary, (secret) => {
      for (const url of replicaUrls(secret)) {
        const message = messageOf(() => loadConfig({ REPLICA_URL: url, DATABASE_PATH: '/srv/ward/facility.db' }))
        if (message !== null) {
          refused++
          if (!message.includes('REPLICA_URL=')) throw new Error(`the refusal names no setting: ${message}`)
          const leak = leakIn(message, secret)
          if (leak !== null) throw new Error(`${JSON.stringify(leak)} of the secret is in: ${message}`)
          continue
        }
        // Accepted: the server logs `shown` at start ("replicating ... to <shown>").
        const { shown } = parseReplicaUrl(url)
        const leak = leakIn(shown, secret) ?? leakIn(shownReplicaUrl(url), secret)
        if (leak !== null) throw new Error(`${JSON.stringify(leak)} of the secret is in the logged URL ${shown}`)
      }
    }),
    { numRuns: propertyRuns(200) },
  )
  t.ok(refused > 0, `${refused} URLs refused, each message checked`)
})

t.test('a password with / or @ written as is gets a refusal that says to percent-encode it', async (t) => {
  const message = messageOf(() => loadConfig({ REPLICA_URL: 'sftp://repl:12/Ab@cd@standby/replicas' }))
  t.match(message, /REPLICA_URL="sftp:\/\/repl:\*\*\*@standby\/replicas": .*percent-encode/)
  t.notMatch(message, /Ab@cd|12\/A/)
  // Before, `12/Ab@cd` was taken for a port and a path: the URL was accepted and logged whole.
  t.throws(() => parseReplicaUrl('sftp://repl:12/Ab@cd@standby/replicas'), { message: /percent-encode/ })
  const encoded = parseReplicaUrl(`sftp://repl:${encodeURIComponent('12/Ab@cd')}@standby/replicas`)
  t.equal(encoded.shown, 'sftp://repl:***@standby/replicas', 'percent-encoded, it is taken and shown masked')
  t.ok(encoded.secrets.includes('12/Ab@cd'), 'and scrubbed from what Litestream prints')
})

/** Lines of REPLICA_CONFIG that are refused, each holding the secret. */
function badLines(secret: string): string[][] {
  return [
    [`secret-access-key ${secret}`],
    [secret],
    [`secret-access-key:\t${secret}`],
    [`  secret-access-key: ${secret}`],
    ['endpoint: http://minio:9000', `url: s3://bucket/x?secret-access-key=${secret}`],
    ['endpoint: http://minio:9000', `${secret}: x`],
    [`password${secret}`],
  ]
}

t.test('REPLICA_CONFIG: a refused line is named by its number, never quoted with its secret', async (t) => {
  const dir = t.testdir({})
  const file = join(dir, 'replica.yml')
  let checked = 0
  fc.assert(
    fc.property(secretArbitrary, (secret) => {
      for (const lines of badLines(secret)) {
        writeFileSync(file, `# replica settings\n\n${lines.join('\n')}\n`)
        const message = messageOf(() => readReplicaExtras(file))
        if (message === null) throw new Error(`not refused: ${JSON.stringify(lines)}`)
        const leak = leakIn(message, secret)
        if (leak !== null) throw new Error(`${JSON.stringify(leak)} of the secret is in: ${message}`)
        if (!/, line \d+/.test(message)) throw new Error(`the line is not named: ${message}`)
        checked++
      }
    }),
    { numRuns: propertyRuns(100) },
  )
  t.ok(checked > 0, `${checked} refused files checked`)
  writeFileSync(file, '# settings\nendpoint: http://minio:9000\nsecret-access-key abc\n')
  t.match(
    messageOf(() => readReplicaExtras(file)),
    /replica\.yml, line 3: expected "key: value"/,
    'the file line',
  )
  writeFileSync(file, 'url: s3://x/y\n')
  t.match(
    messageOf(() => readReplicaExtras(file)),
    /line 1 \(url\): "url" comes from REPLICA_URL/,
    'a known key',
  )
  // Litestream ignores a key it does not know: a typo would lose the setting without a word, and a
  // secret pasted on a line of its own and ending in `:` looks like a key (a drawn secret found it).
  for (const [line, secret] of [
    ['sync-intervall: 10s', ''],
    ['AKIAQWERTY7ZXCV9:', 'AKIAQWERTY7ZXCV9'],
    ['passwordHUNTER2XK9:', 'HUNTER2XK9'],
  ] as const) {
    writeFileSync(file, `endpoint: http://minio:9000\n${line}\n`)
    const message = messageOf(() => readReplicaExtras(file)) ?? 'accepted'
    t.match(message, /replica\.yml, line 2: not one of Litestream 0\.3's replica settings \(name, path, /, line)
    if (secret !== '') t.equal(leakIn(message, secret), null, 'the line is not quoted')
  }
})

t.test('the start-up refusals, as the server and the command line print them', async (t) => {
  const secret = 'AB/CD@EF:GH%IJ+KL=MN/OP'
  const dir = t.testdir({ 'replica.yml': `endpoint: http://minio:9000\nsecret-access-key ${secret}\n` })
  await t.rejects(
    buildApp(
      defaultConfig({
        DATABASE_PATH: join(dir, 'ward.db'),
        REPLICA_URL: join(dir, 'replica'),
        REPLICA_CONFIG: join(dir, 'replica.yml'),
        LOG_LEVEL: 'silent',
      }),
    ),
    { name: 'ConfigError', message: /replica\.yml, line 2: expected "key: value"/ },
  )
  for (const env of [
    { REPLICA_URL: `sftp://repl:${secret}@standby/replicas` },
    { REPLICA_URL: join(dir, 'replica'), REPLICA_CONFIG: join(dir, 'replica.yml') },
  ]) {
    const run = spawnSync(process.execPath, ['--import=tsx', 'cli.ts', 'serve'], {
      env: { ...process.env, PORT: '0', DATABASE_PATH: join(dir, 'ward.db'), ...env },
      encoding: 'utf8',
      timeout: 60_000,
    })
    const said = `${run.stdout}${run.stderr}`
    t.equal(run.status, 1, `refused: ${said.trim().split('\n')[0]}`)
    t.match(said, /REPLICA_URL=|REPLICA_CONFIG/, 'the setting is named')
    t.equal(leakIn(said, secret), null, 'no 8 characters of the secret in what it printed')
  }
})
