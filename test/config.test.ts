import t from 'tap'
import { ConfigError, loadConfig } from '../config.js'

t.test('defaults follow the contract', async (t) => {
  t.match(loadConfig({}), {
    PORT: 3000,
    HOST: '127.0.0.1',
    DATABASE_PATH: './data/facility.db',
    LOG_LEVEL: 'info',
    BED_POLICY: 'exclusive',
  })
})

t.test('values are converted from text and unknown variables ignored', async (t) => {
  const config = loadConfig({ PORT: '8080', BED_POLICY: 'shared', TRUST_PROXY: 'true', PATH: '/usr/bin', PORT_X: 'y' })
  t.equal(config.PORT, 8080)
  t.equal(config.BED_POLICY, 'shared')
  t.equal(config.TRUST_PROXY, true)
})

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
})
