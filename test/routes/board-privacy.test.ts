import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import t from 'tap'
import { bedStateNotification, unavailableAdmission } from '../../domain/bed-state-notes.js'
import { type WardOccupantEvent, wardNotification } from '../../domain/ward-events.js'
import { boardRoot } from '../../routes/board/index.js'

/**
 * The board's privacy mask (public/board/format.js, a browser module without DOM use, so Node runs
 * it as it is). Its fallback is what protects encounters the board has never loaded: a
 * notification about a bed of another page, or one made while the board was closed.
 */

type Redact = (text: string, knownIds: Iterable<string>) => string
const format = (await import(pathToFileURL(join(boardRoot(), 'format.js')).href)) as {
  redact: Redact
  HIDDEN: string
}
const { redact, HIDDEN } = format

// Encounter ids are free text: numbers with dots, slashes, colons, even spaces.
const ENCOUNTERS = ['enc-1001', 'E/2024/77', '2024.0001', 'ENC:77', 'enc 1001', 'V(7)', 'a,b']

function ownTexts(encounter: string): string[] {
  const types: WardOccupantEvent['type'][] = ['occupied', 'discharged', 'reopened']
  const occupants = [
    { id: 'x', facility: 'A', bed: 'B-12', room: 'R-3', encounter, occupiedBy: 'patient-9' },
    { id: 'y', facility: 'A', bed: 'B-12', encounter, occupiedBy: 'patient-9' },
  ]
  const ward = occupants.flatMap((occupant) =>
    types.flatMap((type) => {
      const { title, body } = wardNotification({ type, at: 0, occupant } as WardOccupantEvent)
      return [title, body]
    }),
  )
  // The bed states' own texts that name an encounter (domain/bed-state-notes.ts).
  const free = { facility: 'A', bed: 'B-12', state: 'free' as const }
  const expected = {
    ...free,
    state: 'expected' as const,
    expected: { encounter, kind: 'admission' as const, since: 0 },
  }
  const beds = [bedStateNotification(free, expected, 0), bedStateNotification(expected, free, 0)]
  const closed = { state: 'closed' as const, since: 0, setBy: 'nurse-a' }
  const texts = [...beds, unavailableAdmission('A', 'B-12', encounter, 'hl7:HIS', closed)].flatMap((n) =>
    n ? [n.title, n.body] : [],
  )
  return [...ward, ...texts]
}

t.test("the service's own notifications: an encounter the board does not know is masked whole", async (t) => {
  for (const encounter of ENCOUNTERS) {
    for (const text of ownTexts(encounter)) {
      t.equal(redact(text, new Set()), text.replaceAll(encounter, HIDDEN), `${encounter}: ${text}`)
    }
  }
})

t.test('free text: the word after "encounter" is masked, punctuation kept', async (t) => {
  const cases: [string, string][] = [
    ['Call the lab about encounter enc-77.', `Call the lab about encounter ${HIDDEN}.`],
    ['ENCOUNTER 2024.0001 moved to R-2', `ENCOUNTER ${HIDDEN} moved to R-2`],
    ['encounter E/2024/77, urgent', `encounter ${HIDDEN}, urgent`],
    ['Encounters today: 4', 'Encounters today: 4'],
    ['no encounter', 'no encounter'],
  ]
  for (const [text, masked] of cases) t.equal(redact(text, new Set()), masked, text)
})

t.test('ids the board knows are masked anywhere, the longest first', async (t) => {
  const known = new Set(['enc-1', 'enc-10', 'patient-7', ''])
  t.equal(redact('patient-7 in enc-10, not enc-1', known), `${HIDDEN} in ${HIDDEN}, not ${HIDDEN}`)
  t.equal(redact('Encounter enc-10 now occupies bed B-1.', known), `Encounter ${HIDDEN} now occupies bed B-1.`)
  t.equal(redact('bed B-1 (room R-1)', known), 'bed B-1 (room R-1)', 'beds and rooms are not ids')
})

t.test(
  "the accounts a bed's state names are masked: who set it, in the ward's notice of an admission into it",
  async (t) => {
    const { BedBoard } = (await import(pathToFileURL(join(boardRoot(), 'beds.js')).href)) as {
      BedBoard: new (
        container: unknown,
        opts: { onAnnounce(text: string): void },
      ) => { beds: Map<string, unknown>; knownIds(): Set<string> }
    }
    const board = new BedBoard(null, { onAnnounce: () => {} })
    const closed = { state: 'closed' as const, since: 0, setBy: 'nurse-ann' }
    board.beds.set('B-12', { bed: 'B-12', active: [], state: 'closed', housekeeping: closed })
    const { body } = unavailableAdmission('A', 'B-12', 'enc-1', 'hl7:HIS', closed)
    t.notMatch(redact(body, board.knownIds()), /nurse-ann/)
  },
)
