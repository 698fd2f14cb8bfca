/** Messages between the service and its render process (render-process.ts, render-child.ts). */
import type { RenderErrorCode } from './errors.js'

export interface IsolateLimits {
  timeoutMs: number
  memoryMb: number
  maxOutputBytes: number
}

export interface RenderRequest {
  id: number
  body: string
  data: Record<string, unknown>
  limits: IsolateLimits
}

export type RenderReply =
  | { ready: true }
  | { id: number; ok: true; html: string }
  | { id: number; ok: false; code: RenderErrorCode; message: string }
