import t from 'tap'
import { createCompiler } from '../../render/compiler.js'
import { RenderError } from '../../render/errors.js'
import { slowLayout as slow } from './helpers.js'

t.test('waiting compiles take turns by owner; one owner keeps its own order', async (t) => {
  const compiler = createCompiler(300)
  t.teardown(() => compiler.close())
  const order: string[] = []
  // The worker runs one compile at a time, so the order the promises settle in is the order
  // the compiles ran in. All are queued before the worker is even up.
  const compile = (name: string, source: string, owner: string) =>
    compiler.compile('pug', source, owner).then(
      () => order.push(name),
      (error: unknown) => order.push(`${name} ${error instanceof RenderError ? error.code : String(error)}`),
    )
  await Promise.all([
    compile('a1', slow(1), 'A'),
    compile('a2', slow(2), 'A'),
    compile('a3', slow(3), 'A'),
    compile('b1', 'p b1', 'B'),
    compile('a4', 'p a4', 'A'),
    compile('b2', 'p b2', 'B'),
    compile('c1', 'p c1', 'C'),
  ])
  t.same(order, ['a1 RENDER_TIMEOUT', 'b1', 'c1', 'a2 RENDER_TIMEOUT', 'b2', 'a3 RENDER_TIMEOUT', 'a4'])

  // An owner that comes while another has a backlog goes next, whatever that backlog is.
  order.length = 0
  const backlog = [5, 6, 7].map((n) => compile(`a${n}`, `p a${n}`, 'A'))
  const late = compile('d1', 'p d1', 'D')
  await Promise.all([...backlog, late])
  t.same(order, ['a5', 'd1', 'a6', 'a7'])
})

t.test('a compile that finished in time is not a timeout because the main thread was late to look', async (t) => {
  const compiler = createCompiler(300)
  t.teardown(() => compiler.close())
  await compiler.compile('pug', 'p warm-up', 'A')
  const compiling = compiler.compile('pug', 'p quick', 'A')
  // Block the main thread past the limit in the check phase: the worker answers meanwhile, and the
  // next turn of the event loop starts with the timers, where the compile's limit is due.
  await new Promise<void>((resolve) =>
    setImmediate(() => {
      const until = Date.now() + 1000
      while (Date.now() < until) {}
      resolve()
    }),
  )
  t.match(await compiling, /quick/, 'the answer that was waiting counts')
  await t.rejects(compiler.compile('pug', slow(9), 'A'), { code: 'RENDER_TIMEOUT' }, 'a real overrun still times out')
})
