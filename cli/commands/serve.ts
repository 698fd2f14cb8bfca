import type { Command } from 'commander'

/**
 * `serve`: the HTTP server, exactly as `node dist/server.js` runs it (start-server.ts): every setting
 * from the environment (README, "Configuration"), the same first-start token. --database and
 * --busy-timeout, when given on the command line, stand for DATABASE_PATH and
 * DATABASE_BUSY_TIMEOUT_MS. The command returns once the server listens; the server keeps the
 * process running until SIGTERM or SIGINT.
 */
export function addServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP server (settings from the environment: README, "Configuration")')
    .action(async function serve() {
      // Loaded only here: the other commands start without the whole service.
      const { startServer } = await import('../../start-server.js')
      await startServer(serverEnvironment(program))
    })
}

function serverEnvironment(program: Command): NodeJS.ProcessEnv {
  const env = { ...process.env }
  const opts = program.opts<{ database: string; busyTimeout: number }>()
  if (program.getOptionValueSource('database') === 'cli') env.DATABASE_PATH = opts.database
  if (program.getOptionValueSource('busyTimeout') === 'cli') env.DATABASE_BUSY_TIMEOUT_MS = String(opts.busyTimeout)
  return env
}
