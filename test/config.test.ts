import t from 'tap'
import { ConfigError, loadConfig } from '../config.js'

t.test('defaults follow the contract', async (t) => {
  t.match(loadConfig({}), {
    PORT: 3000,
    HOST: '127.0.0.1',
    DATABASE_PATH: './data/facility.db',
    LOG_LEVEL: 'info',
    BED_POLICY: 'exclusive',
    DURABLE_SYNC: 'background',
  })
})

t.test('values are converted from text and unknown variables ignored', async (t) => {
  const config = loadConfig({ PORT: '8080', BED_POLICY: 'shared', AUDIT_READS: 'true', PATH: '/usr/bin', PORT_X: 'y' })
  t.equal(config.PORT, 8080)
  t.equal(config.BED_POLICY, 'shared')
  t.equal(config.AUDIT_READS, true)
})

t.test(
  'TRUST_PROXY names the proxies by address; true and hop counts are refused, naming what is accepted',
  async (t) => {
    t.equal(loadConfig({}).TRUST_PROXY, false, 'off by default')
    t.equal(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY, false)
    const accepted: [string, string][] = [
      ['127.0.0.1', '127.0.0.1'],
      [' 127.0.0.1 , 10.0.0.0/8 ', '127.0.0.1,10.0.0.0/8'],
      ['::1,fd00::/8', '::1,fd00::/8'],
      ['loopback,uniquelocal', 'loopback,uniquelocal'],
      ['192.168.1.0/24', '192.168.1.0/24'],
    ]
    for (const [text, value] of accepted) t.equal(loadConfig({ TRUST_PROXY: text }).TRUST_PROXY, value, text)
    const refused: [string, RegExp][] = [
      ['true', /TRUST_PROXY="true": true is no longer accepted: it trusted every hop.*127\.0\.0\.1/],
      ['TRUE', /no longer accepted/],
      ['1', /TRUST_PROXY="1": a hop count cannot tell the proxy from a client.*addresses and CIDR ranges/],
      [
        'nginx',
        /TRUST_PROXY="nginx": "nginx" is not an address or CIDR range; expected false, or the proxies' addresses/,
      ],
      ['10.0.0.0/33', /"10\.0\.0\.0\/33" is not an address/],
      ['127.0.0.1,', /"" is not an address/],
      ['10.0.0.1/8/1', /is not an address/],
      ['fd00::/129', /is not an address/],
    ]
    for (const [text, message] of refused) {
      t.throws(() => loadConfig({ TRUST_PROXY: text }), ConfigError, text)
      t.throws(() => loadConfig({ TRUST_PROXY: text }), message, text)
    }
    t.throws(
      () => loadConfig({ TRUST_PROXY: 'true', PORT: 'eighty' }),
      /PORT="eighty".*\n.*TRUST_PROXY="true"/,
      'named beside the other problems',
    )
  },
)

t.test('bad values stop the start with a message naming each variable', async (t) => {
  const attempt = () => loadConfig({ PORT: 'eighty', BED_POLICY: 'sometimes', RATE_LIMIT_MAX: '-1' })
  t.throws(attempt, ConfigError)
  try {
    attempt()
  } catch (error) {
    const message = (error as Error).message
    t.match(message, /PORT="eighty"/)
    t.match(message, /BED_POLICY="sometimes"/)
    t.match(message, /RATE_LIMIT_MAX="-1"/)
  }
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT/)
  t.throws(() => loadConfig({ LOG_LEVEL: 'loud' }), /LOG_LEVEL/)
  t.throws(() => loadConfig({ DURABLE_SYNC: 'never' }), /DURABLE_SYNC="never"/)
  t.equal(loadConfig({ DURABLE_SYNC: 'commit' }).DURABLE_SYNC, 'commit')
})

t.test('render limits have maximums, so no timer derived from them can overflow', async (t) => {
  const top = loadConfig({ RENDER_TIMEOUT_MS: '60000', RENDER_MEMORY_MB: '1024', RENDER_MAX_OUTPUT_BYTES: '16777216' })
  t.match(top, { RENDER_TIMEOUT_MS: 60_000, RENDER_MEMORY_MB: 1024, RENDER_MAX_OUTPUT_BYTES: 16_777_216 })
  // compiling may take 5x the render time: still far below setTimeout's 2^31-1 ms
  t.ok(top.RENDER_TIMEOUT_MS * 5 < 2 ** 31 - 1)
  const attempt = () =>
    loadConfig({ RENDER_TIMEOUT_MS: '500000000', RENDER_MEMORY_MB: '1025', RENDER_MAX_OUTPUT_BYTES: '16777217' })
  t.throws(attempt, ConfigError)
  try {
    attempt()
  } catch (error) {
    const message = (error as Error).message
    t.match(message, /RENDER_TIMEOUT_MS="500000000": .*less or equal to 60000/)
    t.match(message, /RENDER_MEMORY_MB="1025": .*less or equal to 1024/)
    t.match(message, /RENDER_MAX_OUTPUT_BYTES="16777217": .*less or equal to 16777216/)
  }
})

t.test('whole numbers only: "1e9" is not read as 1', async (t) => {
  for (const text of ['1e9', '1.5', '0x10', '12abc', '2 000']) {
    t.throws(() => loadConfig({ RENDER_TIMEOUT_MS: text }), /RENDER_TIMEOUT_MS=.*Expected integer/, text)
    t.throws(() => loadConfig({ PORT: text }), /PORT=.*Expected integer/, text)
  }
  t.equal(loadConfig({ RENDER_TIMEOUT_MS: ' 2000 ' }).RENDER_TIMEOUT_MS, 2000)
})

t.test(
  'NOTIFICATION_PAGE_CACHE_BYTES: 16 MiB by default, 0 turns it off, negative or over 1 GiB refused',
  async (t) => {
    t.equal(loadConfig({}).NOTIFICATION_PAGE_CACHE_BYTES, 16_777_216)
    t.equal(loadConfig({ NOTIFICATION_PAGE_CACHE_BYTES: '0' }).NOTIFICATION_PAGE_CACHE_BYTES, 0)
    for (const text of ['-1', '1073741825', '16MB', '1e6'])
      t.throws(() => loadConfig({ NOTIFICATION_PAGE_CACHE_BYTES: text }), /NOTIFICATION_PAGE_CACHE_BYTES=/, text)
  },
)

t.test(
  'WARD_OCCUPANT_PAGE_CACHE_BYTES: 8 MiB by default, 0 turns it off, negative or over 1 GiB refused',
  async (t) => {
    t.equal(loadConfig({}).WARD_OCCUPANT_PAGE_CACHE_BYTES, 8_388_608)
    t.equal(loadConfig({ WARD_OCCUPANT_PAGE_CACHE_BYTES: '0' }).WARD_OCCUPANT_PAGE_CACHE_BYTES, 0)
    for (const text of ['-1', '1073741825', '8MB', '1e6'])
      t.throws(() => loadConfig({ WARD_OCCUPANT_PAGE_CACHE_BYTES: text }), /WARD_OCCUPANT_PAGE_CACHE_BYTES=/, text)
  },
)

t.test('RENDER_COMPILER_IDLE_SECONDS: 1 by default, 0 keeps the compile worker, up to a day', async (t) => {
  t.equal(loadConfig({}).RENDER_COMPILER_IDLE_SECONDS, 1)
  t.equal(loadConfig({ RENDER_COMPILER_IDLE_SECONDS: '0' }).RENDER_COMPILER_IDLE_SECONDS, 0)
  t.equal(loadConfig({ RENDER_COMPILER_IDLE_SECONDS: '86400' }).RENDER_COMPILER_IDLE_SECONDS, 86_400)
  for (const text of ['-1', '86401', '5s', '1.5'])
    t.throws(() => loadConfig({ RENDER_COMPILER_IDLE_SECONDS: text }), /RENDER_COMPILER_IDLE_SECONDS=/, text)
})

t.test('DATABASE_CACHE_BYTES: 16 MiB by default, from 1 MiB to 1 GiB, whole bytes only', async (t) => {
  t.equal(loadConfig({}).DATABASE_CACHE_BYTES, 16_777_216)
  t.equal(loadConfig({ DATABASE_CACHE_BYTES: '8388608' }).DATABASE_CACHE_BYTES, 8_388_608)
  for (const text of ['0', '1048575', '1073741825', '-1', '32MB', '3e7'])
    t.throws(() => loadConfig({ DATABASE_CACHE_BYTES: text }), /DATABASE_CACHE_BYTES=/, text)
  t.throws(
    () => loadConfig({ DATABASE_CACHE_BYTES: '1024' }),
    /DATABASE_CACHE_BYTES="1024": .*greater or equal to 1048576/,
  )
})

t.test('REPLICA_URL: a directory path or a file://, sftp:// or s3:// URL; off when empty', async (t) => {
  t.equal(loadConfig({}).REPLICA_URL, '', 'no replication by default')
  for (const url of [
    '/srv/replica',
    'replica',
    'file:///srv/replica',
    'sftp://repl@standby.ward:2222/srv/replicas/facility',
    'sftp://repl:secret@standby/replicas/facility',
    's3://ward-backups/facility',
    's3://ward-backups.localhost:9000/facility',
  ])
    t.equal(loadConfig({ REPLICA_URL: url }).REPLICA_URL, url, url)
  const refused: [string, RegExp][] = [
    ['http://standby/replica', /http:\/\/ is not supported; expected a directory path, or a file:/],
    ['gs://bucket/path', /gs:\/\/ is not supported/],
    ['file://relative/replica', /file:\/\/ takes an absolute path/],
    ['sftp:///no-host', /sftp:\/\/ needs a host and a path/],
    ['sftp://standby', /sftp:\/\/ needs a host and a path/],
    ['s3://bucket', /s3:\/\/ needs a bucket and a path/],
    ['s3://KEY:SECRET@bucket/path', /credentials do not go in an s3:\/\/ URL: set LITESTREAM_ACCESS_KEY_ID/],
    ['sftp://a b/x', /is not a valid URL/],
  ]
  for (const [url, message] of refused) {
    t.throws(() => loadConfig({ REPLICA_URL: url }), ConfigError, url)
    t.throws(() => loadConfig({ REPLICA_URL: url }), { message: /REPLICA_URL=/ }, url)
    t.throws(() => loadConfig({ REPLICA_URL: url }), { message }, url)
  }
})

t.test('a password in REPLICA_URL never appears in a configuration error', async (t) => {
  const attempts = [
    { REPLICA_URL: 'ftp://repl:Hunter2-pw@standby/replica' },
    { REPLICA_URL: 'sftp://repl:Hunter2-pw@standby/replica', DATABASE_PATH: ':memory:' },
    { REPLICA_URL: 's3://repl:Hunter2-pw@bucket/path' },
    { REPLICA_URL: 'sftp://repl:Hunter2-pw@standby', PORT: 'eighty' },
  ]
  for (const env of attempts) {
    let message = ''
    try {
      loadConfig(env)
    } catch (error) {
      message = (error as Error).message
    }
    t.match(message, /REPLICA_URL=|PORT=/, 'refused')
    t.notMatch(message, /Hunter2/, `no password: ${message}`)
  }
})

t.test('replication needs a database file; REPLICA_CONFIG needs REPLICA_URL', async (t) => {
  t.throws(() => loadConfig({ REPLICA_URL: '/srv/replica', DATABASE_PATH: ':memory:' }), {
    message: /REPLICA_URL=.*needs DATABASE_PATH to name a database file/,
  })
  t.throws(() => loadConfig({ REPLICA_CONFIG: '/etc/facility/replica.yml' }), {
    message: /REPLICA_CONFIG=.*is only read with REPLICA_URL set/,
  })
  t.match(loadConfig({ REPLICA_URL: '/srv/replica', REPLICA_CONFIG: '/etc/r.yml', LITESTREAM_PATH: '/usr/bin/ls' }), {
    REPLICA_CONFIG: '/etc/r.yml',
    LITESTREAM_PATH: '/usr/bin/ls',
  })
})

t.test('metrics: off by default; off loopback only with METRICS_TOKEN, which no error message shows', async (t) => {
  const defaults = loadConfig({})
  t.equal(defaults.METRICS_PORT, undefined, 'no metrics listener unless asked')
  t.equal(defaults.METRICS_HOST, '127.0.0.1')
  t.equal(loadConfig({ METRICS_PORT: '9464' }).METRICS_PORT, 9464, 'loopback needs no token')
  t.throws(() => loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' }), {
    name: 'ConfigError',
    message: /METRICS_HOST="0\.0\.0\.0": is not loopback: set METRICS_TOKEN/,
  })
  const token = 't'.repeat(40)
  t.equal(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: token }).METRICS_TOKEN, token)
  const short = 'secret-but-short'
  try {
    loadConfig({ METRICS_PORT: '9464', METRICS_TOKEN: short })
    t.fail('a short token is refused')
  } catch (error) {
    t.ok(error instanceof ConfigError)
    t.match((error as Error).message, /METRICS_TOKEN="\(hidden\)": must be at least 32 characters/)
    t.notMatch((error as Error).message, short, 'the token is not shown')
  }
})
