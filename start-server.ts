import { closeSync, fsyncSync, lstatSync, rmSync, type Stats, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import closeWithGrace from 'close-with-grace'
import { buildApp, listenOptions, loggerOptions } from './app.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { openPrivateFile } from './lib/private-files.js'
import { releaseStartGarbage } from './lib/start-garbage.js'

/** Where a non-interactive first start leaves the first admin token (beside the database). */
export const BOOTSTRAP_TOKEN_FILE = 'first-admin-token'

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
  }).catch(stopOnConfigError)

  closeWithGrace({ delay: 10_000 }, async function closeApp({ signal, err }) {
    if (err) app.log.error({ err }, 'shutting down after an error')
    else app.log.info({ signal }, 'shutting down: finishing requests in flight')
    await app.close()
  })

  try {
    deliverBootstrapToken(app, config)
  } catch (error) {
    await app.close()
    stopOnConfigError(error)
  }
  // Before the first request: the pause (tens of ms) is part of starting, not of an answer.
  releaseStartGarbage()
  hooks.beforeListen?.(app)
  await app.listen({ port: config.PORT, host: config.HOST })
  return app
}

function readConfig(env: NodeJS.ProcessEnv): Config {
  try {
    return loadConfig(env)
  } catch (error) {
    return stopOnConfigError(error)
  }
}

/** A setting found wrong only when used (a replica's settings that Litestream refuses) stops the start the same way. */
function stopOnConfigError(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`facility-service: ${error.message}\n`)
    process.exit(1)
  }
  throw error
}

/**
 * On the first start of an empty database, one admin token, so a newcomer can make a first call,
 * without it ever reaching a log: on an interactive terminal it is shown there; otherwise (a
 * service whose output is the journal) it is written to `first-admin-token` beside the database,
 * readable by the service's user only, and the log says where. Nowhere to put it (an in-memory
 * database without a terminal): no token is made, and `facility-service token create` makes one.
 */
function deliverBootstrapToken(app: ServerApp, config: Config): void {
  if (app.tokens.count() > 0) return
  const interactive = process.stdout.isTTY === true
  const file = config.DATABASE_PATH === ':memory:' ? null : join(dirname(config.DATABASE_PATH), BOOTSTRAP_TOKEN_FILE)
  if (!interactive && file === null) {
    app.log.warn('first start: no admin token was made; create one with `facility-service token create --role admin`')
    return
  }
  if (interactive) {
    const { token } = app.tokens.create({ account: 'admin', role: 'admin', label: 'bootstrap (first start)' })
    process.stdout.write(
      '\nFirst start on an empty database: here is an admin token. It is shown only this once;\n' +
        'keep it safe, and create narrower tokens with `npx facility-service token create`.\n\n' +
        `  ${token}\n\n`,
    )
    return
  }
  const path = file as string
  // The file exists before the token does: a token made with nowhere to put it would be lost, as
  // the next start, seeing a token in the database, makes none.
  const fd = claimTokenFile(path)
  try {
    const { token } = app.tokens.create({ account: 'admin', role: 'admin', label: 'bootstrap (first start)' })
    writeFileSync(fd, `${token}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  app.log.info(
    { file: path },
    `first start: an admin token was written to ${path} (readable by this user only); read it, then delete the file`,
  )
}

function describeKind(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory'
  if (stat.isSymbolicLink()) return 'a symbolic link'
  return 'not a regular file'
}

/**
 * A new, empty 0600 file at `path` for the token, or a clear refusal (a ConfigError: the place
 * follows from DATABASE_PATH) when something other than a plain file is there. A plain file is
 * one left from an earlier database: it would hold a token this database does not know.
 */
function claimTokenFile(path: string): number {
  let stat: Stats | undefined
  try {
    stat = lstatSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  if (stat !== undefined && !stat.isFile())
    throw new ConfigError(
      `DATABASE_PATH: the first admin token is written to ${path}, which is ${describeKind(stat)}; remove it and start again (no token was made)`,
    )
  if (stat !== undefined) rmSync(path)
  return openPrivateFile(path)
}
