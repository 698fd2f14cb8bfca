import type { TestApp } from '../helper.js'
import { bearer } from '../helper.js'

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
