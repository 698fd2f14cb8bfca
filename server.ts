import closeWithGrace from 'close-with-grace'
import { buildApp, listenOptions, loggerOptions } from './app.js'
import { type Config, ConfigError, loadConfig } from './config.js'

function readConfig(): Config {
  try {
    return loadConfig(process.env)
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`facility-service: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
}

/** On the first start of an empty database, one admin token, so a newcomer can make a first call. */
function printBootstrapToken(app: Awaited<ReturnType<typeof buildApp>>): void {
  if (app.tokens.count() > 0) return
  const { token } = app.tokens.create({ account: 'admin', role: 'admin', label: 'bootstrap (printed at first start)' })
  process.stdout.write(
    '\nFirst start on an empty database: here is an admin token. It is shown only this once;\n' +
      'keep it safe, and create narrower tokens with `npx facility-service token create`.\n\n' +
      `  ${token}\n\n`,
  )
}

const config = readConfig()
const app = await buildApp(config, {
  logger: loggerOptions(config),
  ...listenOptions(config),
})

closeWithGrace({ delay: 10_000 }, async function closeApp({ signal, err }) {
  if (err) app.log.error({ err }, 'shutting down after an error')
  else app.log.info({ signal }, 'shutting down: finishing requests in flight')
  await app.close()
})

printBootstrapToken(app)
await app.listen({ port: config.PORT, host: config.HOST })

// For the reliability tests only (test/reliability/idempotency-crash.test.ts): die right after the
// first commit that stored something, before any answer is sent, the way a power cut would.
if (process.env.FACILITY_SERVICE_TEST_KILL_AFTER_COMMIT === '1') {
  app.writes.onCommit(() => process.kill(process.pid, 'SIGKILL'))
}
