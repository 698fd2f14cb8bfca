/**
 * Starts a worker thread on one of this folder's entry files, compiled (dist/*.js) or from source
 * (*.ts under tsx, as the tests run). Loader flags (tsx) are not applied to worker entry files on
 * Node 20, so the worker boots from plain JS and loads a TypeScript entry through tsx's API.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads'

const BOOT = `
const { workerData } = require('node:worker_threads')
void (workerData.tsx
  ? import(workerData.tsx).then((tsx) => tsx.tsImport(workerData.entry, workerData.entry))
  : import(workerData.entry))
`

/** `name` is the entry's file name without extension, e.g. `compile-worker`. */
export function startWorker(name: string, resourceLimits: WorkerOptions['resourceLimits']): Worker {
  const fromSource = import.meta.url.endsWith('.ts')
  const entry = new URL(`./${name}.${fromSource ? 'ts' : 'js'}`, import.meta.url).href
  const tsx = fromSource ? import.meta.resolve('tsx/esm/api') : undefined
  return new Worker(BOOT, { eval: true, execArgv: [], workerData: { entry, tsx }, resourceLimits })
}
