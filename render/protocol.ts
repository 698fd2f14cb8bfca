/** Messages between the service and its render workers (render-pool.ts, render-worker.ts). */
import type { RenderErrorCode } from './errors.js'
import type { EncodedData } from './render-data.js'

export interface SandboxLimits {
  timeoutMs: number
  memoryMb: number
  maxOutputBytes: number
}

/** Only text and numbers: the data is JSON already (render-data.ts). */
export interface RenderRequest {
  id: number
  body: string
  data: EncodedData
  limits: SandboxLimits
}

export type RenderReply =
  | { ready: true }
  | { id: number; ok: true; html: string }
  | { id: number; ok: false; code: RenderErrorCode; message: string }
