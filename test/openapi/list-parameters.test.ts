import qs from 'qs'
import t from 'tap'
import { bearer, buildTestApp } from '../helper.js'

interface Parameter {
  name: string
  in: string
  schema: { example?: unknown }
}

/**
 * The document and the engine agree: every query parameter a list operation documents, sent with
 * its documented example the way a client encodes it, is accepted; and a field the engine does not
 * know is refused, so the document cannot be listing parameters that do nothing.
 */
t.test('every documented list parameter, with its example, is accepted by the query engine', async (t) => {
  const { app, tokens } = await buildTestApp(t)
  const document = (await app.inject('/openapi.json')).json() as {
    paths: Record<string, Record<string, { operationId: string; parameters?: Parameter[] }>>
  }
  const lists = Object.entries(document.paths).flatMap(([path, ops]) =>
    Object.values(ops)
      .filter((op) => (op.parameters ?? []).some((p) => p.name === '$sort'))
      .map((op) => ({ path, op })),
  )
  t.same(lists.map((l) => l.op.operationId).sort(), [
    'countUnseenNotifications',
    'listFormTemplates',
    'listNotifications',
    'listWardOccupants',
  ])
  for (const { path, op } of lists) {
    const params = (op.parameters ?? []).filter((p) => p.in === 'query')
    t.ok(params.length > 20, `${op.operationId}: ${params.length} parameters`)
    for (const param of params) {
      t.not(param.schema.example, undefined, `${op.operationId} ${param.name} has an example`)
      const query = qs.stringify({ [param.name]: param.schema.example }, { encodeValuesOnly: true })
      const res = await app.inject({ url: `${path}?${query}`, headers: bearer(tokens.admin) })
      t.equal(res.statusCode, 200, `${op.operationId}?${query}: ${res.statusCode === 200 ? '' : res.body}`)
    }
    const unknown = await app.inject({ url: `${path}?notAField=1`, headers: bearer(tokens.admin) })
    t.equal(unknown.statusCode, 400, `${op.operationId}: an undocumented field is refused`)
  }
})
