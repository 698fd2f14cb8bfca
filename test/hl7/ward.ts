import type { Test } from 'tap'
import type { Config } from '../../config.js'
import type { TestApp } from '../helper.js'
import { bearer, buildTestApp } from '../helper.js'
import { ackOf, openSender } from './client.js'
import { type AdtFields, adt } from './messages.js'

export interface Bed {
  id: string
  facility?: string
  room?: string
  bed: string
  encounter: string
  occupiedBy: string
  provider?: string
  occupiedAt: number
  dischargedAt?: number
  createdBy: string
  dischargedBy?: string
}

/** The ward occupants as the API shows them to an admin, oldest first. */
export async function occupants(app: TestApp, token: string, query = ''): Promise<Bed[]> {
  const res = await app.inject({ method: 'GET', url: `/ward-occupants?$limit=1000${query}`, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(`GET /ward-occupants: ${res.statusCode} ${res.body}`)
  return res.json().wardOccupants
}

/** encounter -> bed of the active occupants, as a bed board reads it. */
export async function activeBeds(app: TestApp, token: string): Promise<Record<string, string>> {
  const all = await occupants(app, token, '&dischargedAt=null')
  return Object.fromEntries(all.map((o) => [o.encounter, `${o.facility ?? ''}/${o.bed}`]))
}

/**
 * A ward fed over a real MLLP connection, its times read in UTC: `send` numbers its messages (MSG1,
 * MSG2 ...), names `facility` unless the fields name another, and adds a PV2 segment when given
 * one; `raw` sends a text as it is.
 */
export async function feedWard(t: Test, facility: string, overrides: Partial<Config> = {}) {
  const { app, tokens } = await buildTestApp(t, { HL7_PORT: 0, HL7_TIMEZONE: 'UTC', ...overrides })
  const sender = await openSender(app.hl7.port as number)
  t.teardown(() => sender.close())
  let n = 0
  async function send(fields: Omit<AdtFields, 'control'> & { pv2?: string }) {
    n++
    const { pv2, ...rest } = fields
    const text = adt({ control: `MSG${n}`, facility, ...rest })
    return ackOf(await sender.send(pv2 === undefined ? text : `${text}\rPV2|${pv2}`))
  }
  const raw = async (text: string) => ackOf(await sender.send(text))
  return { app, tokens, send, raw }
}
