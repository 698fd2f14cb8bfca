import type { TestApp } from '../helper.js'
import { bearer } from '../helper.js'

/** Admits a patient over the REST API; answers the ward-occupant record. */
export async function admit(
  app: TestApp,
  token: string,
  stay: { bed: string; encounter: string; occupiedBy: string; room?: string; provider?: string; occupiedAt?: number },
) {
  const res = await app.inject({ method: 'POST', url: '/ward-occupants', headers: bearer(token), payload: stay })
  if (res.statusCode !== 200) throw new Error(`admission refused: ${res.body}`)
  return res.json() as { id: string }
}

export async function discharge(app: TestApp, token: string, id: string) {
  const res = await app.inject({
    method: 'PATCH',
    url: `/ward-occupants/${id}`,
    headers: bearer(token),
    payload: { discharge: true },
  })
  if (res.statusCode !== 200) throw new Error(`discharge refused: ${res.body}`)
}

/**
 * Ward A with five stays: four finished visits V1-V4 alternating between beds A-1 and A-2 (May 2024),
 * and V5 in progress in A-2. The scan-limit tests set FHIR_MAX_SCAN_STAYS one below it.
 */
export async function fiveStaysOfA(app: TestApp, token: string): Promise<void> {
  for (let n = 1; n <= 4; n++) {
    const stay = await admit(app, token, {
      bed: n % 2 === 0 ? 'A-2' : 'A-1',
      encounter: `V${n}`,
      occupiedBy: `p${n}`,
      occupiedAt: Date.UTC(2024, 4, n, 10),
    })
    await discharge(app, token, stay.id)
  }
  await admit(app, token, { bed: 'A-2', encounter: 'V5', occupiedBy: 'p5' })
}

/** A FHIR GET as a client sends it; the answer parsed. */
export async function fhirGet(app: TestApp, token: string | null, url: string, headers: Record<string, string> = {}) {
  const res = await app.inject({ url, headers: { ...(token === null ? {} : bearer(token)), ...headers } })
  return { status: res.statusCode, headers: res.headers, body: res.body === '' ? null : res.json() }
}

interface BundleLike {
  total: number
  link: { relation: string; url: string }[]
  entry?: { fullUrl: string; resource: { resourceType: string; id: string }; search: { mode: string } }[]
}

/** Every page of a search, following its next links; answers the bundles. */
export async function allPages(app: TestApp, token: string, url: string): Promise<BundleLike[]> {
  const pages: BundleLike[] = []
  let next: string | undefined = url
  while (next !== undefined) {
    const page = (await fhirGet(app, token, next)).body as BundleLike
    pages.push(page)
    const link = page.link.find((l) => l.relation === 'next')?.url
    next = link === undefined ? undefined : new URL(link).pathname + new URL(link).search
    if (pages.length > 100) throw new Error('paging does not end')
  }
  return pages
}

export const ids = (bundle: BundleLike, mode = 'match') =>
  (bundle.entry ?? []).filter((e) => e.search.mode === mode).map((e) => `${e.resource.resourceType}/${e.resource.id}`)
