import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import t from 'tap'
import { parseQueryString } from '../../plugins/query-string.js'
import { bearer } from '../helper.js'
import { propertyRuns } from '../property-runs.js'
import { appWithLog } from './app-with-log.js'

/**
 * With LOG_QUERY_VALUES=true the log has full URLs; a stream ticket (or a token) in one must never
 * be written, however the client spelled its parameter or wherever it put it. A real server, a
 * real logger writing lines, real sockets; the spelling is drawn from the ways a parameter name can
 * be bent (case, percent-encoding, a NUL, a `+`, a dot, brackets, a `;` before it). Either the
 * service took the parameter as the ticket (the stream opened: then it was spelled `ticket` once
 * parsed), or it did not; in both cases no line holds 8 characters of it in a row.
 */

const LETTERS = [...'ticket']
const SUFFIXES = ['', '%00', '+', '.a', '[]', '[0]', '%20', '%5B%5D', '[a]', '%2E', '_', '%09']
const PREFIXES = ['', 'a=1;', 'resources=x;', 'a=1&', ';', 'a=1%3B', 'x']

const spellingArbitrary = fc.record({
  // Per letter: as is, upper case, or percent-encoded (either case of hex digits).
  letters: fc.array(fc.constantFrom('same', 'upper', 'encoded'), { minLength: 6, maxLength: 6 }),
  suffix: fc.constantFrom(...SUFFIXES),
  prefix: fc.constantFrom(...PREFIXES),
  // Where the ticket goes: a value, percent-encoded value, the key itself, the path.
  place: fc.constantFrom('value', 'encoded-value', 'key', 'path', 'value-in-list'),
  path: fc.constantFrom('/events', '/ward-occupants', '/nowhere'),
})

type Spelling = typeof spellingArbitrary extends fc.Arbitrary<infer S> ? S : never

function nameOf(spelling: Spelling): string {
  const letters = LETTERS.map((letter, i) => {
    const how = spelling.letters[i]
    if (how === 'upper') return letter.toUpperCase()
    if (how === 'encoded') return `%${letter.charCodeAt(0).toString(16)}`
    return letter
  })
  return `${letters.join('')}${spelling.suffix}`
}

function pathWith(spelling: Spelling, ticket: string): string {
  const name = nameOf(spelling)
  const encoded = [...ticket].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('')
  switch (spelling.place) {
    case 'key':
      return `${spelling.path}?${spelling.prefix}${ticket}=1`
    case 'path':
      return `/${ticket}${spelling.path}?${spelling.prefix}${name}=1`
    case 'encoded-value':
      return `${spelling.path}?${spelling.prefix}${name}=${encoded}`
    case 'value-in-list':
      return `${spelling.path}?${spelling.prefix}${name}=a,${ticket},b`
    default:
      return `${spelling.path}?${spelling.prefix}${name}=${ticket}`
  }
}

/** The first 8 characters in a row of the ticket's random part found in the text. */
function leakIn(text: string, ticket: string): string | null {
  const secret = ticket.slice(ticket.indexOf('_') + 1)
  for (let i = 0; i + 8 <= secret.length; i++) if (text.includes(secret.slice(i, i + 8))) return secret.slice(i, i + 8)
  return null
}

/** The status of a GET over a socket; a stream that opened is closed at once. */
function statusOf(base: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers: { accept: 'text/event-stream' } }, (res) => {
      resolve(res.statusCode ?? 0)
      res.destroy()
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('LOG_QUERY_VALUES=true: no spelling or place of a ticket gets it into the log', async (t) => {
  const { app, lines } = await appWithLog(t, {
    AUTH_FAILURE_LIMIT: 1_000_000,
    LOG_LEVEL: 'trace',
    LOG_QUERY_VALUES: true,
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  let opened = 0
  let refused = 0
  await fc.assert(
    fc.asyncProperty(spellingArbitrary, async (spelling) => {
      // A token of its own each run: unused tickets count against their token's cap.
      const token = app.tokens.create({ account: 'viewer', role: 'read', facility: null, label: null }).token
      const issued = await app.inject({ method: 'POST', url: '/events/tickets', headers: bearer(token) })
      const ticket = issued.json().ticket as string
      const path = pathWith(spelling, ticket)
      const before = lines.length
      const status = await statusOf(base, path)
      // The lines of the request are written once the answer has gone; a stream's when it closes.
      await new Promise((resolve) => setTimeout(resolve, 20))
      const query = path.includes('?') ? path.slice(path.indexOf('?') + 1) : ''
      if (status === 200) {
        opened++
        if (parseQueryString(query).ticket !== ticket || !path.startsWith('/events?'))
          throw new Error(`a stream opened for ${path}, which does not name the parameter ticket`)
      } else refused++
      const text = lines.slice(before).join('')
      const leak = leakIn(text, ticket) ?? leakIn(lines.join(''), ticket)
      if (leak !== null) throw new Error(`${JSON.stringify(leak)} of the ticket is in the log after ${path}:\n${text}`)
    }),
    {
      numRuns: propertyRuns(150),
      // The spellings the parser reads as `ticket`, so that streams do open (and their lines are checked).
      examples: [
        [{ letters: Array(6).fill('same'), suffix: '', prefix: '', place: 'value', path: '/events' }],
        [
          {
            letters: ['encoded', ...Array(5).fill('same')],
            suffix: '',
            prefix: 'a=1&',
            place: 'value',
            path: '/events',
          },
        ],
        [{ letters: Array(6).fill('encoded'), suffix: '', prefix: '', place: 'encoded-value', path: '/events' }],
      ],
    },
  )
  t.ok(refused > 0, `${refused} requests refused`)
  t.ok(opened >= 2, `${opened} streams opened by a spelling the parser reads as ticket`)
  t.ok(lines.join('').includes('"url":"/events?'), 'full URLs are logged, as LOG_QUERY_VALUES says')
})
