import t from 'tap'
import { errorOfOutput, parseGoDuration, parseLine, redactor, secretsOfEnv } from '../../db/replication/log-lines.js'
import { Unshipped } from '../../db/replication/unshipped.js'

t.test("Litestream's JSON lines: level kept, routine lines at debug, what was shipped and when", async (t) => {
  const written = parseLine(
    '{"time":"2026-11-25T20:55:45.084321064Z","level":"INFO","msg":"wal segment written","db":"/d/app.db","replica":"s3","elapsed":"6.5ms","sz":552080}',
  )
  t.match(written, { level: 'debug', msg: 'wal segment written', fields: { replica: 's3', sz: 552080 }, error: null })
  t.equal(written.shippedUpTo, Date.parse('2026-11-25T20:55:45.084Z') - 6.5)
  const error = parseLine(
    '{"time":"2026-11-25T20:55:46.370Z","level":"ERROR","msg":"monitor error","error":"dial tcp: connection refused"}',
  )
  t.match(error, { level: 'error', msg: 'monitor error', error: 'dial tcp: connection refused', shippedUpTo: null })
  t.match(parseLine('{"time":"x","level":"WARN","msg":"w"}', 7), { at: 7, level: 'warn' })
  t.match(parseLine('panic: runtime error', 7), { at: 7, level: 'warn', msg: 'panic: runtime error', fields: {} })
  t.match(parseLine('[1,2]', 7), { level: 'warn', msg: '[1,2]' })
})

t.test("Go durations and Litestream's errors", async (t) => {
  t.equal(parseGoDuration('1.5s'), 1500)
  t.equal(parseGoDuration('2m3.5s'), 123_500)
  t.equal(parseGoDuration('447.131µs'), 0.447131)
  t.equal(parseGoDuration(undefined), 0)
  t.equal(errorOfOutput('{"level":"ERROR","msg":"failed to run","error":"bucket required"}\n'), 'bucket required')
  t.equal(errorOfOutput('2026/11/25 ERROR failed to run error="no \\"matching\\" backups"'), 'no "matching" backups')
  t.equal(errorOfOutput('something else\n'), 'something else')
})

t.test('secrets are scrubbed wherever they appear; short values are left alone', async (t) => {
  const redact = redactor(['pa$$w0rd', 'pa%24%24w0rd', '1', ''])
  t.equal(redact('sftp://bob:pa$$w0rd@host and pa%24%24w0rd, 1 2'), 'sftp://bob:[redacted]@host and [redacted], 1 2')
  t.equal(redactor([])('text'), 'text')
  const env = {
    LITESTREAM_SECRET_ACCESS_KEY: 'k1',
    AWS_ACCESS_KEY_ID: 'k2',
    AWS_REGION: 'r',
    PATH: '/bin',
    MY_SECRET: 'x',
  }
  t.same(secretsOfEnv(env).sort(), ['k1', 'k2'])
})

t.test('the lag is the age of the oldest commit Litestream has not shipped', async (t) => {
  const unshipped = new Unshipped()
  t.equal(unshipped.lagMs(100), 0, 'nothing committed: no lag')
  for (const at of [10, 20, 30]) unshipped.note(at)
  t.equal(unshipped.lagMs(100), 90)
  unshipped.shipped(20)
  t.equal(unshipped.lagMs(100), 70, 'commits up to the read are shipped')
  unshipped.shipped(30)
  t.equal(unshipped.lagMs(100), 0)
  for (let i = 0; i < 5000; i++) unshipped.note(1000 + i)
  unshipped.shipped(3999)
  t.equal(unshipped.lagMs(10_000), 10_000 - 4000, 'many commits, shipped in part')
})
