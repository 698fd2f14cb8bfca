import BetterSqlite3, { type Database, type Statement } from 'better-sqlite3'

/** One statement a repository ran: its SQL text and the values it bound, as the request made them. */
export interface RanStatement {
  sql: string
  params: unknown[]
}

const RUNS = new Set(['all', 'get', 'run', 'iterate'])

/**
 * From now on, every statement prepared on `db` reports each time it runs, with its parameters,
 * into `ran` (a test may empty it between requests), until `stop()`. Statements prepared earlier
 * (a repository's, at build time) do not report; those a repository prepares and caches meanwhile
 * keep reporting. Plan tests EXPLAIN exactly these, with these values, instead of SQL written in
 * the test: SQLite's STAT4 statistics make plans depend on the values.
 */
export function recordStatements(db: Database): { ran: RanStatement[]; stop(): void } {
  const recorder = { ran: [] as RanStatement[], stop }
  let recording = true
  const prepare = db.prepare.bind(db)
  db.prepare = ((sql: string) => {
    const statement = prepare(sql)
    const proxy: Statement = new Proxy(statement, {
      get(target, property) {
        const value = Reflect.get(target, property, target)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (recording && RUNS.has(String(property))) recorder.ran.push({ sql, params: args })
          const result = value.apply(target, args)
          // pluck(), raw(), expand() answer the statement itself: keep answering the recording one.
          return result === target ? proxy : result
        }
      },
    })
    return proxy
  }) as typeof db.prepare
  function stop() {
    recording = false
    db.prepare = prepare as typeof db.prepare
  }
  return recorder
}

/** The statements prepared and run on `db` while `run` goes on (recordStatements). */
export async function statementsRunDuring(db: Database, run: () => Promise<void>): Promise<RanStatement[]> {
  const recorder = recordStatements(db)
  try {
    await run()
  } finally {
    recorder.stop()
  }
  return recorder.ran
}

/** The query plan of a statement that ran, with the values it ran with. */
export function planOf(db: Database, { sql, params }: RanStatement): string[] {
  const explain = db.prepare(`EXPLAIN QUERY PLAN ${sql}`)
  return (explain.all(...params) as { detail: string }[]).map((row) => row.detail)
}

/**
 * Every statement any connection of this process prepares from now on, its own build-time ones
 * included (the repositories', prepared when the app is built), reports each run into `ran`,
 * tagged with the `scenario` current at the time, until `stop()`. Process-wide: a test that uses it
 * runs alone (test/groups.ts).
 */
export function recordEveryStatement(): {
  ran: (RanStatement & { scenario: string })[]
  scenario: string
  stop(): void
} {
  const proto = BetterSqlite3.prototype as { prepare: (sql: string) => Statement }
  const prepare = proto.prepare
  const recorder = { ran: [] as (RanStatement & { scenario: string })[], scenario: '', stop }
  let recording = true
  proto.prepare = function recordedPrepare(this: Database, sql: string) {
    const statement = prepare.call(this, sql)
    const proxy: Statement = new Proxy(statement, {
      get(target, property) {
        const value = Reflect.get(target, property, target)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (recording && RUNS.has(String(property)))
            recorder.ran.push({ sql, params: args, scenario: recorder.scenario })
          const result = value.apply(target, args)
          return result === target ? proxy : result
        }
      },
    })
    return proxy
  }
  function stop() {
    recording = false
    proto.prepare = prepare
  }
  return recorder
}
