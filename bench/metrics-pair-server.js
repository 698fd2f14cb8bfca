// Two copies of the service in one process (`node bench/metrics-pair-server.js`), built as
// `npm start` builds it (dist/app.js, the settings from the environment): "off" on DATABASE_PATH
// and PORT without metrics, "on" on DATABASE_PATH_ON and PORT_ON with METRICS_PORT set. One process,
// so the two share one JIT, one heap and one CPU: loaded in turns, the process's CPU time in each
// turn is what that copy cost, and nothing that tells two processes apart weighs on the ratio
// (bench/metrics-cost.js).
import { buildApp, listenOptions, loggerOptions } from '../dist/app.js'
import { loadConfig } from '../dist/config.js'

async function start(env) {
  const config = loadConfig(env)
  const app = await buildApp(config, { logger: loggerOptions(config), ...listenOptions(config) })
  await app.listen({ port: config.PORT, host: config.HOST })
  return app
}

const { DATABASE_PATH_ON, PORT_ON, METRICS_PORT, ...env } = process.env
const apps = [await start(env), await start({ ...env, DATABASE_PATH: DATABASE_PATH_ON, PORT: PORT_ON, METRICS_PORT })]
process.on('SIGTERM', async () => {
  for (const app of apps) await app.close()
  process.exit(0)
})
