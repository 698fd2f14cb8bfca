import t from 'tap'
import { bearer, buildTestApp, type TestApp } from '../helper.js'

// The audit trail of a record that moves between facilities, read by administrators bound to one
// facility: each sees of every entry only what it could read of the record at that moment. The
// oracle is GET /form-templates/:id as that admin just before and just after each change.

interface Seen {
  before: unknown
  after: unknown
  operation: string
}

async function visible(app: TestApp, token: string, id: string): Promise<unknown> {
  const res = await app.inject({ url: `/form-templates/${id}`, headers: bearer(token) })
  return res.statusCode === 200 ? res.json() : null
}

t.test('a facility-bound admin reads of a move only the side it could read', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const adminB = app.tokens.create({ account: 'admin-b', role: 'admin', facility: 'B' }).token
  const admins = { A: tokens.adminA, B: adminB, all: tokens.admin }
  const expected: Record<keyof typeof admins, Seen[]> = { A: [], B: [], all: [] }
  const write = bearer(tokens.write)
  let id = ''

  async function change(operation: string, run: () => Promise<{ statusCode: number; json(): unknown }>) {
    const before = new Map<string, unknown>()
    for (const [side, token] of Object.entries(admins)) before.set(side, id ? await visible(app, token, id) : null)
    const res = await run()
    if (res.statusCode !== 200) throw new Error(`${operation}: ${res.statusCode}`)
    id ||= (res.json() as { id: string }).id
    for (const [side, token] of Object.entries(admins) as [keyof typeof admins, string][]) {
      const seen = { operation, before: before.get(side) ?? null, after: await visible(app, token, id) }
      if (seen.before !== null || seen.after !== null) expected[side].push(seen)
    }
  }
  const patch = (payload: object) => () =>
    app.inject({ method: 'PATCH', url: `/form-templates/${id}`, headers: write, payload })

  await change('create', () =>
    app.inject({
      method: 'POST',
      url: '/form-templates',
      headers: write,
      payload: { type: 'intake', name: 'A form', facility: 'A' },
    }),
  )
  await change('patch', patch({ description: 'A text' }))
  await change('patch', patch({ facility: 'B', name: 'B form', description: 'B text' }))
  await change('patch', patch({ description: 'more B text' }))
  await change('patch', patch({ facility: 'A', name: 'back' }))
  await change('delete', () => app.inject({ method: 'DELETE', url: `/form-templates/${id}`, headers: write }))

  t.equal(expected.all.length, 6)
  t.equal(expected.A.length, 5, 'A: create, patch, moved out, moved back, delete')
  t.equal(expected.B.length, 3, 'B: moved in, patch, moved out')
  for (const [side, token] of Object.entries(admins) as [keyof typeof admins, string][]) {
    const res = await app.inject({ url: `/audit?recordId=${id}`, headers: bearer(token) })
    t.equal(res.statusCode, 200)
    const entries = res.json().entries as (Seen & { facility: string | null })[]
    t.same(
      entries.map(({ operation, before, after }) => ({ operation, before, after })),
      expected[side],
      `${side}: every entry as GET showed it, before and after`,
    )
    if (side !== 'all') {
      for (const e of entries) t.equal(e.facility, side, `${side}: an entry of its own facility`)
      // The name it had only in the other facility (the description went along both ways).
      t.notOk(JSON.stringify(entries).includes(side === 'A' ? 'B form' : 'A form'), 'nothing of the other side')
    }
  }
})
