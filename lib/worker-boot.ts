/**
 * Starts a worker thread on an entry file beside the module that asks for it, compiled (dist/*.js) or from source
 * (*.ts under tsx, as the tests run), or inside the single executable on the worker's bundle it
 * carries. Loader flags (tsx) are not applied to worker entry files on Node 20, so the worker boots
 * from plain JS and loads a TypeScript entry through tsx's API.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads'
import { executableManifest, insideExecutable } from './executable.js'

const BOOT = `
const { workerData } = require('node:worker_threads')
void (workerData.tsx
  ? import(workerData.tsx).then((tsx) => tsx.tsImport(workerData.entry, workerData.entry))
  : import(workerData.entry))
`

// The executable has no file to import: the bundle is its asset, imported as a data: URL (a
// worker, unlike the executable's main script, may import one). No code is written to disk.
const EXECUTABLE_BOOT = `
const { workerData } = require('node:worker_threads')
const code = require('node:sea').getAsset(workerData.asset, 'utf8')
void import('data:text/javascript;base64,' + Buffer.from(code).toString('base64'))
`

/**
 * `besides`: the asking module's `import.meta.url`; `name`: the entry's file name beside it, without
 * extension, e.g. `compile-worker`. `data` reaches the worker as `workerData.data`.
 */
export function startWorker(
  besides: string,
  name: string,
  resourceLimits: WorkerOptions['resourceLimits'],
  data?: unknown,
): Worker {
  if (insideExecutable()) {
    const bundle = executableManifest().workers[name]
    if (!bundle) throw new Error(`the executable carries no worker named ${name}`)
    return new Worker(EXECUTABLE_BOOT, {
      eval: true,
      execArgv: [],
      workerData: { asset: bundle.asset, data },
      resourceLimits,
    })
  }
  const fromSource = besides.endsWith('.ts')
  const entry = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, besides).href
  const tsx = fromSource ? import.meta.resolve('tsx/esm/api') : undefined
  return new Worker(BOOT, { eval: true, execArgv: [], workerData: { entry, tsx, data }, resourceLimits })
}
