/** Entry of the compile worker thread: one request at a time, answered in order. */
import { parentPort } from 'node:worker_threads'
import { type CompileEngine, compileTemplate } from './compile.js'

export interface CompileRequest {
  id: number
  engine: CompileEngine
  source: string
}

function answer(request: CompileRequest): void {
  parentPort?.postMessage({ id: request.id, ...compileTemplate(request.engine, request.source) })
}

parentPort?.on('message', answer)
parentPort?.postMessage({ ready: true })
