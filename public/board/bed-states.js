// What state a bed shows, in words and a symbol (never colour alone): docs/BOARD.md, "States".

/** How long a bed stays marked after a discharge. */
export const RECENT_MS = 2 * 60 * 60 * 1000

export const LABELS = {
  occupied: { icon: '●', text: 'Occupied' },
  'on-leave': { icon: '↗', text: 'On leave' },
  expected: { icon: '→', text: 'Expected' },
  free: { icon: '○', text: 'Free' },
  recent: { icon: '↺', text: 'Recently discharged' },
  cleaning: { icon: '✧', text: 'Cleaning' },
  closed: { icon: '⊘', text: 'Closed' },
  contaminated: { icon: '☣', text: 'Contaminated' },
  isolated: { icon: '◈', text: 'Isolated' },
}

/** A pending admission or transfer names the bed, and its time (BED_EXPECTED_HOURS) has not run out. */
const expecting = (bed, now = Date.now()) => bed.expected !== undefined && !(bed.expected.until <= now)

const awayIds = (bed) => new Set((bed.onLeave ?? []).map((mark) => mark.wardOccupantId))

/** The state a bed shows: as the service says (GET /beds), kept up to date from the feed's changes. */
export function stateOf(bed, now = Date.now()) {
  if (bed.active.length > 0) {
    const away = awayIds(bed)
    return bed.active.every((o) => away.has(o.id)) ? 'on-leave' : 'occupied'
  }
  if (bed.housekeeping) return bed.housekeeping.state
  if (expecting(bed, now)) return 'expected'
  const left = bed.lastDischarged?.dischargedAt
  return left !== undefined && now - left < RECENT_MS ? 'recent' : 'free'
}

/** What else holds beside the state: a housekeeping state of an occupied bed, a discharge or patient expected. */
export function flagsOf(bed, state) {
  const flags = []
  if (bed.housekeeping && bed.housekeeping.state !== state) flags.push(bed.housekeeping.state)
  if (bed.dischargeExpected?.length) flags.push('Discharge expected')
  if (expecting(bed) && state !== 'expected') flags.push('Patient expected')
  if (state === 'occupied' && bed.onLeave?.length) flags.push('One on leave')
  return flags.map((flag) => (LABELS[flag] ? `${LABELS[flag].icon} ${LABELS[flag].text}` : `⚑ ${flag}`)).join(' · ')
}

/** A stay's change: the bed's marks and expectation follow it as the service's triggers do. */
export function followStay(bed, action, record) {
  const ended = action === 'removed' || record.dischargedAt !== undefined
  if (ended) {
    for (const key of ['onLeave', 'dischargeExpected']) {
      if (bed[key]) bed[key] = bed[key].filter((mark) => mark.wardOccupantId !== record.id)
    }
  }
  if (action === 'created' && bed.expected?.encounter === record.encounter) delete bed.expected
}

/** A bed-states event: the bed's state fields as the service has them now. */
export function takeStatus(bed, status) {
  for (const key of ['housekeeping', 'expected', 'onLeave', 'dischargeExpected']) {
    if (status[key] === undefined) delete bed[key]
    else bed[key] = status[key]
  }
}
