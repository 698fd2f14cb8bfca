import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { defaultConfig } from '../../config.js'

/**
 * What Litestream reports while it closes after our SIGTERM is logged as an error only when the
 * replica lacks commits. Litestream 0.3.13 was seen (CI, a file replica, writes up to the stop) to
 * log `error closing db: client write: stat …wal.lz4.tmp: no such file or directory` after a final
 * sync that had shipped every commit: its close and its replica's monitor wrote the same segment.
 * A stand-in for Litestream says exactly that when told to stop, so both outcomes can be had here.
 */

const CLOSING_ERROR =
  'client write: stat /replica/generations/g/wal/00000004_00000000.wal.lz4.tmp: no such file or directory'

function fakeLitestream(dir: string): string {
  const path = join(dir, 'litestream')
  const said = join(dir, 'closing.json')
  const line = { time: new Date().toISOString(), level: 'ERROR', msg: 'error closing db', error: CLOSING_ERROR }
  writeFileSync(said, `${JSON.stringify(line)}\n`)
  writeFileSync(
    path,
    [
      '#!/bin/sh',
      // `databases` checks the settings at start: they are fine. Stopped, it says its error twice.
      'if [ "$1" = databases ]; then exit 0; fi',
      `trap 'cat ${said} ${said}; exit 0' TERM`,
      'while :; do sleep 0.05; done',
      '',
    ].join('\n'),
  )
  chmodSync(path, 0o755)
  return path
}

async function serve(t: Test) {
  const dir = t.testdir()
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n')) if (text) lines.push(JSON.parse(text))
      done()
    },
  })
  const config = defaultConfig({
    DATABASE_PATH: join(dir, 'ward.db'),
    REPLICA_URL: join(dir, 'replica'),
    LITESTREAM_PATH: fakeLitestream(dir),
    RATE_LIMIT_MAX: 0,
  })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  await app.ready()
  return { app, lines }
}

const said = (lines: Record<string, unknown>[]) =>
  lines.filter((line) => String(line.msg).startsWith('litestream: error closing db'))

t.test('every commit shipped: what it says while closing is a warning', async (t) => {
  const { app, lines } = await serve(t)
  await app.close()
  const closing = said(lines)
  t.equal(closing.length, 1, 'its closing error is logged once')
  t.equal(closing[0]?.level, 40, 'as a warning')
  t.match(
    String(closing[0]?.msg),
    /client write: stat .*no such file or directory \(while closing, after a final sync that shipped every commit\)/,
  )
  t.notOk(
    lines.some((line) => line.level === 50),
    'no error logged at all',
  )
})

t.test('commits not on the replica: what it says while closing stays an error', async (t) => {
  const { app, lines } = await serve(t)
  const token = app.tokens.create({ account: 'nurse', role: 'write', facility: null, label: 'test' }).token
  const res = await app.inject({
    method: 'POST',
    url: '/ward-occupants',
    headers: { authorization: `Bearer ${token}` },
    payload: { encounter: 'e-1', bed: 'b-1', occupiedBy: 'p-1' },
  })
  t.equal(res.statusCode, 200, 'a write the stand-in never ships')
  await app.close()
  const closing = said(lines)
  t.equal(closing.length, 1, 'its closing error is logged once')
  t.equal(closing[0]?.level, 50, 'as an error: the stand-in shipped nothing')
  t.ok(
    lines.some((line) => /commits of the last \d+ ms not on the replica/.test(String(line.msg))),
    'the stop says commits are missing',
  )
})
