// The benchmark scenarios. Each one makes the next request (method, path, headers, body); the
// runner feeds them to autocannon. Requests rotate over ids and facilities so no cache of any
// kind (SQLite's page cache included) sees the same row twice in a row.
import { BEDS_PER_FACILITY, FACILITIES, READERS_PER_FACILITY } from './seed.js'

const json = { 'content-type': 'application/json' }
const auth = (token) => ({ authorization: `Bearer ${token}` })

/** A cycling cursor over a list. */
function cycle(list) {
  let i = 0
  return () => list[i++ % list.length]
}

const ITEM_TYPES = ['identification', 'multiplechoice', 'trueorfalse', 'checklist', 'date', 'time', 'year']

/** A form template as a ward would write one: 20 questions of every kind, tags, a print layout. */
export function formTemplateBody(n, facility) {
  const items = Array.from({ length: 20 }, (_, k) => {
    const type = ITEM_TYPES[k % ITEM_TYPES.length]
    const item = { type, question: `Question ${k + 1} of the admission check?`, order: k + 1, required: k % 2 === 0 }
    if (type === 'multiplechoice' || type === 'checklist') item.choices = ['none', 'mild', 'moderate', 'severe']
    if (k % 5 === 0) item.set = `section-${k / 5}`
    return item
  })
  return {
    type: 'assessment',
    subtype: `admission-${n % 7}`,
    name: `Admission assessment ${n}`,
    description: 'Vital signs and the first assessment at admission.',
    facility,
    tags: ['vitals', `set-${n % 50}`],
    items,
    template: 'h1= name\nul\n  each item in items\n    li= item.question\n',
    meta: { version: 3 },
  }
}

/**
 * Every scenario of the issue. `target` is the least ratio to the bare route (req/s); `needs`
 * names the data a scenario cannot run without.
 */
export function scenarios(ctx) {
  const { tokens, runId } = ctx
  const facilityToken = (f) => tokens.facility[f]
  return [
    {
      key: 'get',
      title: 'get ward occupant by id',
      target: 0.75,
      make() {
        const next = cycle(ctx.sample)
        return () => {
          const { id, facility } = next()
          return { method: 'GET', path: `/ward-occupants/${id}`, headers: auth(facilityToken(facility)) }
        }
      },
    },
    {
      key: 'get-oidc',
      title: 'get ward occupant by id, provider token',
      target: 0.75,
      needs: () => (ctx.providerTokens ? null : 'no provider tokens'),
      make() {
        const next = cycle(ctx.sample)
        return () => {
          const { id, facility } = next()
          return { method: 'GET', path: `/ward-occupants/${id}`, headers: auth(ctx.providerTokens[facility]) }
        }
      },
    },
    {
      key: 'list',
      title: 'list 50 active occupants of a facility',
      target: 0.15,
      make() {
        let i = 0
        return () => {
          const f = i++ % FACILITIES
          return {
            method: 'GET',
            path: '/ward-occupants?dischargedAt=null&$limit=50',
            headers: auth(facilityToken(f)),
          }
        }
      },
    },
    {
      key: 'list-bed',
      title: 'list the history of one bed (50)',
      make() {
        let i = 0
        return () => {
          const n = i++
          const f = n % FACILITIES
          const bed = `B-${Math.floor(n / FACILITIES) % BEDS_PER_FACILITY}`
          return {
            method: 'GET',
            path: `/ward-occupants?bed=${bed}&$sort[occupiedAt]=-1&$limit=50`,
            headers: auth(facilityToken(f)),
          }
        }
      },
    },
    {
      key: 'create',
      title: 'create ward occupant (durable)',
      target: 0.25,
      make() {
        let n = 0
        return () => {
          const i = n++
          const f = i % FACILITIES
          // A bed name nobody used before, so the one-occupant-per-bed rule never answers 409.
          const body = {
            encounter: `bench-enc-${runId}-${i}`,
            bed: `N-${runId}-${i}`,
            room: `R-${i % 50}`,
            occupiedBy: `patient-${runId}-${i}`,
            provider: `dr-${i % 50}`,
          }
          return { method: 'POST', path: '/ward-occupants', headers: { ...json, ...auth(facilityToken(f)) }, body }
        }
      },
      onResponse(status, body) {
        // The service answers 200, the Feathers peer 201 Created.
        if (status === 200 || status === 201) ctx.patchPool.push(JSON.parse(body).id)
      },
    },
    {
      key: 'patch',
      title: 'patch discharge (durable)',
      target: 0.25,
      make() {
        // Each active id (seeded, or admitted by the create scenario) is discharged once. When the
        // pool is used up the run stops early; the requests then in flight repeat the last id and
        // answer 409 ALREADY_DISCHARGED, which the table shows as non-2xx.
        let i = 0
        return () => {
          const id = ctx.patchPool[i++]
          if (id === undefined) return null
          return {
            method: 'PATCH',
            path: `/ward-occupants/${id}`,
            headers: { ...json, ...auth(tokens.write) },
            body: { discharge: true },
          }
        }
      },
    },
    {
      key: 'ft-create',
      title: 'create form template, 20 items (durable)',
      make() {
        let n = 0
        return () => {
          const i = n++
          return {
            method: 'POST',
            path: '/form-templates',
            headers: { ...json, ...auth(facilityToken(i % FACILITIES)) },
            body: formTemplateBody(i, undefined),
          }
        }
      },
    },
    {
      key: 'ft-get',
      title: 'get form template by id',
      needs: () => (ctx.templates.length > 0 ? null : 'no form templates were seeded'),
      make() {
        const next = cycle(ctx.templates)
        return () => {
          const { id, facility } = next()
          return { method: 'GET', path: `/form-templates/${id}`, headers: auth(facilityToken(facility)) }
        }
      },
    },
    {
      key: 'notifications',
      title: 'list notifications of one account (50)',
      target: 0.15,
      make() {
        let i = 0
        return () => ({
          method: 'GET',
          path: '/notifications?$limit=50',
          headers: auth(facilityToken(i++ % FACILITIES)),
        })
      },
    },
    {
      key: 'notif-unseen',
      title: 'list 50 unseen notifications, newest first',
      make() {
        let i = 0
        return () => ({
          method: 'GET',
          path: '/notifications?$unseen=true&$sort[createdAt]=-1&$limit=50',
          headers: auth(facilityToken(i++ % FACILITIES)),
        })
      },
    },
    {
      key: 'notif-count',
      title: 'unseen notification count',
      target: 0.3,
      make() {
        let i = 0
        return () => ({
          method: 'GET',
          path: '/notifications/unseen-count',
          headers: auth(facilityToken(i++ % FACILITIES)),
        })
      },
    },
    {
      key: 'notif-seen',
      title: 'mark a notification seen (durable)',
      needs: () => (ctx.toMark?.some((ids) => ids.length > 0) ? null : 'no notifications were seeded'),
      make() {
        // Readers of each ward mark its newest notifications: every request is a first mark (a
        // real write with its feed event), as many readers as wards times READERS_PER_FACILITY.
        let i = 0
        return () => {
          const n = i++
          const f = n % FACILITIES
          const reader = Math.floor(n / FACILITIES) % READERS_PER_FACILITY
          const ids = ctx.toMark[f]
          const id = ids[Math.floor(n / (FACILITIES * READERS_PER_FACILITY)) % ids.length]
          return { method: 'POST', path: `/notifications/${id}/seen`, headers: auth(tokens.readers[f][reader]) }
        }
      },
    },
    {
      key: 'render',
      title: 'render a form template to HTML (pug, sandboxed)',
      needs: () => (ctx.templates.length > 0 ? null : 'no form templates were seeded'),
      make() {
        const next = cycle(ctx.templates)
        return () => {
          const { id, facility } = next()
          return { method: 'GET', path: `/form-templates/${id}/render`, headers: auth(facilityToken(facility)) }
        }
      },
    },
  ]
}
