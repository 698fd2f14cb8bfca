/** Messages between the service and its render process (render-process.ts, render-child.ts). */
import type { RenderErrorCode } from './errors.js'

export interface IsolateLimits {
  timeoutMs: number
  memoryMb: number
  maxOutputBytes: number
}

/**
 * Flat on purpose: the channel deserializes every message before any code of ours runs, and a
 * message it cannot read ends the process. So the caller's data travels as bytes (v8.serialize)
 * and the render process decodes it per request, where a failure fails only that render.
 */
export interface RenderRequest {
  id: number
  body: string
  data: Uint8Array
  limits: IsolateLimits
}

export type RenderReply =
  | { ready: true }
  | { id: number; ok: true; html: string }
  | { id: number; ok: false; code: RenderErrorCode; message: string }
