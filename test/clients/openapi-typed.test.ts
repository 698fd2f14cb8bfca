import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { buildTestApp } from '../helper.js'
import { dumpOpenapi } from '../openapi/document.js'

const run = promisify(execFile)
const bin = (name: string) => join(PROJECT_ROOT, 'node_modules', '.bin', name)

// A client as a user writes it from the generated types: filters, operators, $sort and paging,
// all typed, and no cast anywhere.
const CLIENT = `import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const [baseUrl, token] = process.argv.slice(2)
const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } })

for (const [bed, room] of [['B-1', 'R-3'], ['B-2', 'R-3'], ['B-3', 'R-4'], ['B-4', 'R-3']]) {
  const { error } = await client.POST('/ward-occupants', { body: { bed, room, encounter: \`e-\${bed}\`, occupiedBy: 'p' } })
  if (error) throw new Error(error.message)
}
const listed = await client.GET('/ward-occupants', { params: { query: { bed: 'B-4' } } })
const id = listed.data?.wardOccupants[0]?.id ?? ''
const discharged = await client.PATCH('/ward-occupants/{id}', { params: { path: { id } }, body: { discharge: true } })

const active = await client.GET('/ward-occupants', {
  params: { query: { room: 'R-3', dischargedAt: 'null', $sort: { bed: -1 }, $limit: 10 } },
})
const some = await client.GET('/ward-occupants', {
  params: { query: { 'bed[$in]': ['B-1', 'B-3'], 'createdAt[$gte]': 0, $select: ['bed'] } },
})
const missing = await client.GET('/ward-occupants/{id}', { params: { path: { id: '000000000000000000000000' } } })
console.log(
  JSON.stringify({
    discharged: discharged.data?.dischargedAt !== undefined,
    active: active.data?.wardOccupants.map((r) => r.bed),
    total: active.data?.total,
    some: some.data?.wardOccupants.map((r) => \`\${Object.keys(r).join(',')}:\${r.bed}\`),
    missing: { status: missing.response.status, name: missing.error?.name, code: missing.error?.code },
  }),
)
`

// The generated types are precise: a field the service does not have does not compile.
const WRONG = `import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const client = createClient<paths>({ baseUrl: 'http://localhost' })
await client.GET('/ward-occupants', { params: { query: { notAField: 'x' } } })
`

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: true,
    outDir: 'out',
    lib: ['ES2022', 'DOM'],
  },
}

t.test('a client generated from /openapi.json compiles and lists with filters', async (t) => {
  const { dir: docDir, file } = await dumpOpenapi()
  // Inside node_modules so the compiled client resolves openapi-fetch from the project.
  const cache = join(PROJECT_ROOT, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, 'typed-client-'))
  t.teardown(() => {
    rmSync(dir, { recursive: true, force: true })
    rmSync(docDir, { recursive: true, force: true })
  })
  await run(bin('openapi-typescript'), [file, '--output', join(dir, 'api.d.ts')])
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}')
  writeFileSync(join(dir, 'client.ts'), CLIENT)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, files: ['client.ts'] }))
  writeFileSync(join(dir, 'wrong.ts'), WRONG)
  writeFileSync(join(dir, 'tsconfig.wrong.json'), JSON.stringify({ ...TSCONFIG, files: ['wrong.ts'] }))
  t.notMatch(CLIENT, /\bas\b|<any>|@ts-/, 'no cast in the client')

  const compiled = await run(bin('tsc'), ['-p', join(dir, 'tsconfig.json')]).then(
    () => 'ok',
    (e: { stdout: string }) => e.stdout,
  )
  t.equal(compiled, 'ok', 'the typed client compiles with tsc')
  const wrong = await run(bin('tsc'), ['-p', join(dir, 'tsconfig.wrong.json')]).then(
    () => 'compiled',
    (e: { stdout: string }) => e.stdout,
  )
  t.match(wrong, /notAField/, 'an unknown filter does not compile')

  const { app, tokens } = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const { stdout } = await run(process.execPath, [join(dir, 'out', 'client.js'), base, tokens.write])
  t.same(JSON.parse(stdout), {
    discharged: true,
    active: ['B-2', 'B-1'],
    total: 2,
    some: ['id,bed:B-1', 'id,bed:B-3'],
    missing: { status: 404, name: 'NotFound', code: 'NOT_FOUND' },
  })
})
