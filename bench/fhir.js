// The FHIR scenarios (docs/FHIR.md): a ward of 40 beds of its own, admitted through the API, read
// through /fhir and through the REST routes that list the same records, in the same run. The
// ratio of each FHIR search to its REST list is the target (at least 0.5).
import BetterSqlite3 from 'better-sqlite3'
import { createTokenRepository } from '../dist/db/repositories/tokens.js'

export const FHIR_WARD = 'ward-fhir'
const BEDS = 40
const TARGET = 0.5

const auth = (token) => ({ authorization: `Bearer ${token}` })

/** Each FHIR scenario and the REST list of the same records it is compared with. */
const PAIRS = [
  {
    fhir: 'fhir-encounters',
    rest: 'fhir-rest-active',
    what: 'Encounter search (in-progress, _include=Encounter:location)',
  },
  { fhir: 'fhir-locations', rest: 'fhir-rest-beds', what: 'Location search (_revinclude=Encounter:location)' },
]
export const FHIR_KEYS = PAIRS.flatMap((pair) => [pair.rest, pair.fhir])

/**
 * A token bound to the FHIR ward (written into the running service's database: tokens are read
 * from it on each request) and the ward's 40 admissions, in 10 rooms, through HTTP.
 */
export async function prepareFhirWard(service, database, ctx, only) {
  if (only && !FHIR_KEYS.some((key) => only.has(key))) return 'not asked for'
  const db = new BetterSqlite3(database)
  db.pragma('busy_timeout = 10000')
  try {
    ctx.fhirToken = createTokenRepository(db).create({
      account: 'fhir-nurse',
      role: 'write',
      facility: FHIR_WARD,
      label: 'bench fhir',
    }).token
  } finally {
    db.close()
  }
  for (let b = 0; b < BEDS; b++) {
    const body = {
      encounter: `fhir-V${b}`,
      bed: `F-${b}`,
      room: `FR-${b % 10}`,
      occupiedBy: `fhir-patient-${b}`,
      provider: `dr-${b % 5}`,
    }
    const res = await fetch(`${service.url}/ward-occupants`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth(ctx.fhirToken) },
      body: JSON.stringify(body),
    })
    if (res.status !== 200) return `admission refused (${res.status}): ${(await res.text()).slice(0, 200)}`
  }
  return `${BEDS} beds admitted in ${FHIR_WARD}`
}

export function fhirScenarios(ctx) {
  const needs = () => (ctx.fhirToken ? null : 'no FHIR ward')
  const get = (path) => () => () => ({ method: 'GET', path, headers: auth(ctx.fhirToken) })
  return [
    {
      key: 'fhir-rest-active',
      title: `REST: the ${BEDS} active occupants of a ward`,
      needs,
      make: get('/ward-occupants?dischargedAt=null&$limit=50'),
    },
    {
      key: 'fhir-encounters',
      title: `FHIR: the ${BEDS} in-progress Encounters with their beds`,
      needs,
      make: get('/fhir/Encounter?status=in-progress&_include=Encounter:location&_count=50'),
    },
    {
      key: 'fhir-rest-beds',
      title: `REST: the ${BEDS} beds of a ward with their occupants`,
      needs,
      make: get('/beds'),
    },
    {
      key: 'fhir-locations',
      title: `FHIR: the ward's Locations with their current Encounters`,
      needs,
      make: get('/fhir/Location?_revinclude=Encounter:location&_count=100'),
    },
  ]
}

/** One line per FHIR search: its req/s beside its REST list's, and the ratio to the target. */
export function fhirNotes(results) {
  const rps = (key) => results.find((r) => r.scenario.key === key)?.result?.rps
  return PAIRS.flatMap(({ fhir, rest, what }) => {
    const [f, r] = [rps(fhir), rps(rest)]
    if (!f || !r) return []
    const ratio = f / r
    return [
      `FHIR ${what}: ${f.toFixed(0)} req/s, ${ratio.toFixed(2)} of the REST list's ${r.toFixed(0)} (target ≥ ${TARGET}: ${ratio >= TARGET ? 'met' : 'NOT met'})`,
    ]
  })
}
