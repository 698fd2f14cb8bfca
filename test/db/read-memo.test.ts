import BetterSqlite3 from 'better-sqlite3'
import t from 'tap'
import { createReadMemo } from '../../db/read-memo.js'

/** How many times the answer was computed, for reads of one key through a memo on `db`. */
function counted(db: BetterSqlite3.Database) {
  const memo = createReadMemo<number>(db, 1_000_000, () => 8)
  const count = db.prepare<[], number>('SELECT count(*) FROM notes').pluck()
  let computed = 0
  const read = db.transaction(() =>
    memo.remember('all', () => {
      computed++
      return count.get() as number
    }),
  )
  return { read, computed: () => computed }
}

t.test('a remembered answer is dropped when this connection drops and makes a table again', async (t) => {
  // Found by a review: neither data_version nor total_changes() moves on a schema change.
  const db = new BetterSqlite3(':memory:')
  t.teardown(() => db.close())
  db.exec('CREATE TABLE notes (text TEXT)')
  db.exec("INSERT INTO notes VALUES ('a'), ('b')")
  const { read, computed } = counted(db)
  t.equal(read(), 2)
  t.equal(read(), 2)
  t.equal(computed(), 1, 'asked twice, computed once')
  // A table of the same name and no row, without a row changed through this connection.
  db.exec('DROP TABLE notes')
  db.exec('CREATE TABLE notes (text TEXT)')
  t.equal(read(), 0, 'the new table is read')
  t.equal(computed(), 2)
})
