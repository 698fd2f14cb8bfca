/** Entry of the compile worker thread: one request at a time, answered in order. */
import { parentPort } from 'node:worker_threads'
import { type CompileEngine, compileTemplate } from './compile.js'
import { preparePug } from './pug-safe.js'

export interface CompileRequest {
  id: number
  engine: CompileEngine
  source: string
}

function answer(request: CompileRequest): void {
  parentPort?.postMessage({ id: request.id, ...compileTemplate(request.engine, request.source) })
}

// Loading pug takes a while; done before `ready`, so a compile's time limit measures that compile
// only. Should it fail, each pug compile reports the failure.
try {
  await preparePug()
} catch {}
parentPort?.on('message', answer)
parentPort?.postMessage({ ready: true })
