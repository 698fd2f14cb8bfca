import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import closeWithGrace from 'close-with-grace'
import { buildApp, listenOptions, loggerOptions } from './app.js'
import { type Config, ConfigError, loadConfig } from './config.js'

export type ServerApp = Awaited<ReturnType<typeof buildApp>>

export interface ServerHooks {
  /** Runs on the ready app right before it listens, so it sees every request (tests use it). */
  beforeListen?(app: ServerApp): void
}

/**
 * The service as this process's server: configuration from `env`, logger and timeouts, a graceful
 * close on a signal, the first-start admin token, then listening. A bad configuration ends the
 * process with exit code 1 and the reason on stderr.
 */
export async function startServer(env: NodeJS.ProcessEnv, hooks: ServerHooks = {}): Promise<ServerApp> {
  const config = readConfig(env)
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
  hooks.beforeListen?.(app)
  await app.listen({ port: config.PORT, host: config.HOST })
  return app
}

function readConfig(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`facility-service: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
}

/** On the first start of an empty database, one admin token, so a newcomer can make a first call. */
function printBootstrapToken(app: ServerApp): void {
  if (app.tokens.count() > 0) return
  const { token } = app.tokens.create({ account: 'admin', role: 'admin', label: 'bootstrap (printed at first start)' })
  process.stdout.write(
    '\nFirst start on an empty database: here is an admin token. It is shown only this once;\n' +
      'keep it safe, and create narrower tokens with `npx facility-service token create`.\n\n' +
      `  ${token}\n\n`,
  )
}

/** Run as the program (`node dist/server.js`), not imported by another entry that starts it itself. */
function isMain(): boolean {
  const entry = process.argv[1]
  return entry !== undefined && realpathSync(entry) === fileURLToPath(import.meta.url)
}

if (isMain()) await startServer(process.env)
