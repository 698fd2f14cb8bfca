import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'tap'
import { buildApp } from '../../app.js'
import { runCli } from '../../cli/run.js'
import { defaultConfig } from '../../config.js'
import { capture } from '../cli/capture.js'
import { adt } from './messages.js'

test('hl7 send prints each ACK of a file of messages; hl7 status counts the log', async (t) => {
  const dir = t.testdir()
  const database = join(dir, 'ward.db')
  const app = await buildApp(defaultConfig({ DATABASE_PATH: database, LOG_LEVEL: 'silent', HL7_PORT: 0 }))
  t.teardown(() => app.close())
  // As a site keeps them in a text file: LF line ends, a blank line between messages.
  const file = join(dir, 'adt.hl7')
  const messages = [
    adt({ event: 'A01', control: 'CLI1', encounter: 'E1', bed: 'B1' }),
    adt({ event: 'A03', control: 'CLI2', encounter: 'NOBODY' }),
    adt({ event: 'A01', control: 'CLI3', encounter: 'E3' }),
  ]
  writeFileSync(file, messages.map((m) => m.replaceAll('\r', '\n')).join('\n\n'))
  const io = capture()
  const code = await runCli(['hl7', 'send', file, '--to', `127.0.0.1:${app.hl7.port}`], io)
  t.equal(code, 1, 'an AR among them: exit code 1')
  const out = io.stdout.join('\n')
  t.match(out, /MSA\|AA\|CLI1\|applied/)
  t.match(out, /MSA\|AA\|CLI2\|parked: /)
  t.match(out, /MSA\|AR\|CLI3\|PV1-3\.3/)
  t.match(io.stderr.join('\n'), /1 message\(s\) not accepted/)

  const status = capture()
  t.equal(await runCli(['--database', database, 'hl7', 'status'], status), 0)
  t.match(status.stdout.join('\n'), /applied\t1\nignored\t0\nparked\t1\nrejected\t1/)
})

test('hl7 send: a wrong --to or a file without messages is a clear error', async (t) => {
  const dir = t.testdir({ 'empty.hl7': '\n\n', 'pid.hl7': 'PID|1||X\n' })
  for (const [args, pattern] of [
    [['hl7', 'send', join(dir, 'empty.hl7'), '--to', 'nowhere'], /expected HOST:PORT/],
    [['hl7', 'send', join(dir, 'empty.hl7'), '--to', '127.0.0.1:9'], /no HL7 message/],
    [['hl7', 'send', join(dir, 'pid.hl7'), '--to', '127.0.0.1:9'], /first line is not an MSH segment/],
    [['hl7', 'send', join(dir, 'missing.hl7'), '--to', '127.0.0.1:9'], /ENOENT|no such file/],
  ] as const) {
    const io = capture()
    t.not(await runCli([...args], io), 0)
    t.match(io.stderr.join('\n'), pattern)
  }
})
