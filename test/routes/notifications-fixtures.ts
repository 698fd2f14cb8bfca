import { createNotificationRepository, type NewNotification } from '../../db/repositories/notifications.js'
import { bearer, type TestApp } from '../helper.js'

const base = { code: 'bed-occupied', type: 'ward', title: 'Bed occupied', body: 'A bed was occupied.' }

/**
 * Seven notifications covering every kind of addressing, keyed by name. The test tokens' accounts:
 * nurse-a, viewer-a, admin-a (facility A), nurse-b (B), nurse-all, viewer-all, admin-1 (no facility).
 */
export const SEED: Record<string, NewNotification> = {
  wardA: { ...base, facility: 'A', createdAt: 1000 },
  wardB: { ...base, facility: 'B', createdAt: 2000 },
  everywhere: {
    code: 'new-queue-item',
    type: 'warehouse',
    title: 'Stock arrived',
    body: 'Gloves are in.',
    facility: null,
    direction: 'inbound',
    createdAt: 3000,
  },
  nurseA: { ...base, facility: 'A', to: ['nurse-a'], direction: 'outbound', meta: { x: 1 }, createdAt: 4000 },
  viewerAndAdminA: { ...base, facility: 'A', to: ['viewer-a', 'admin-a', 'viewer-a'], createdAt: 5000 },
  unboundNurses: { ...base, facility: null, to: ['nurse-all', 'nurse-b'], createdAt: 6000 },
  nurseAinB: { ...base, facility: 'B', to: ['nurse-a'], createdAt: 7000 },
}

/** Inserts SEED through the repository; returns the ids by name and a reverse map. */
export function seed(app: TestApp) {
  const repo = createNotificationRepository(app.db)
  const ids: Record<string, string> = {}
  for (const [name, input] of Object.entries(SEED)) ids[name] = repo.create(input).id
  const names = (records: { id: string }[]) =>
    records.map((r) => Object.keys(ids).find((name) => ids[name] === r.id) ?? r.id)
  return { ids, names }
}

export function client(app: TestApp, token: string) {
  return {
    list: (query = '') => app.inject({ url: `/notifications?${query}`, headers: bearer(token) }),
    get: (id: string) => app.inject({ url: `/notifications/${id}`, headers: bearer(token) }),
    seen: (id: string) => app.inject({ method: 'POST', url: `/notifications/${id}/seen`, headers: bearer(token) }),
    unseen: (query = '') => app.inject({ url: `/notifications/unseen-count?${query}`, headers: bearer(token) }),
  }
}
