import t from 'tap'
import { buildTestApp } from '../helper.js'

// SQLite takes a negative cache_size as KiB: the setting's bytes, rounded down to whole KiB.
t.test("DATABASE_CACHE_BYTES sets the connection's page cache", async (t) => {
  const byDefault = await buildTestApp(t)
  t.equal(byDefault.app.db.pragma('cache_size', { simple: true }), -16_384, '16 MiB by default')
  const small = await buildTestApp(t, { DATABASE_CACHE_BYTES: 8 * 1024 * 1024 + 1000 })
  t.equal(small.app.db.pragma('cache_size', { simple: true }), -8192, '8 MiB')
})
