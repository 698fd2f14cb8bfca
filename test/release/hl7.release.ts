import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ackOf, openSender } from '../hl7/client.js'
import { adt } from '../hl7/messages.js'
import { stopServer } from '../reliability/server-process.js'
import { installAlone, releaseBuild, runExecutable, serveExecutable } from './helpers.js'

// The ADT feed in the single executable alone (no Node, no node_modules beside it): it carries
// the MLLP listener and the `hl7` commands, and the beds it fills are read back over HTTP.
const release = releaseBuild()

t.test('the executable alone takes ADT over MLLP and shows the beds; its own hl7 send works', async (t) => {
  const install = installAlone(t.testdir(), release.executable)
  const server = await serveExecutable(install, { HL7_PORT: '0', HL7_TIMEZONE: 'UTC' })
  t.teardown(() => stopServer(server))
  const port = Number(/"port":(\d+)[^\n]*ADT feed listening/.exec(server.output())?.[1])
  t.ok(port > 0, 'the ADT listener runs')

  const sender = await openSender(port)
  t.equal(
    ackOf(await sender.send(adt({ event: 'A01', control: 'R1', encounter: 'E1', bed: 'B1', facility: 'F' }))).code,
    'AA',
  )
  t.equal(
    ackOf(await sender.send(adt({ event: 'A02', control: 'R2', encounter: 'E1', bed: 'B2', facility: 'F' }))).code,
    'AA',
  )
  await sender.close()

  const file = join(install.dir, 'adt.hl7')
  writeFileSync(
    file,
    adt({ event: 'A01', control: 'R3', encounter: 'E2', bed: 'B3', facility: 'F' }).replaceAll('\r', '\n'),
  )
  const sent = await runExecutable(install, ['hl7', 'send', file, '--to', `127.0.0.1:${port}`])
  t.equal(sent.code, 0, sent.stderr)
  t.match(sent.stdout, /MSA\|AA\|R3\|applied/)

  const made = await runExecutable(install, ['token', 'create', '--account', 'release', '--role', 'admin'])
  const token = made.stdout.trim().split('\n').at(-1) as string
  const res = await fetch(`${server.base}/ward-occupants?dischargedAt=null&$sort[bed]=1`, {
    headers: { authorization: `Bearer ${token}` },
  })
  const beds = ((await res.json()) as { wardOccupants: { encounter: string; bed: string }[] }).wardOccupants
  t.same(
    beds.map((o) => [o.encounter, o.bed]),
    [
      ['E1', 'B2'],
      ['E2', 'B3'],
    ],
  )
  const status = await runExecutable(install, ['hl7', 'status'])
  t.match(status.stdout, /applied\t3/)
})
