// The benchmark's command line (`npm run bench -- --help`): its options, read once.
import { parseArgs } from 'node:util'

const HELP = `npm run bench -- [options]
  --occupants N        ward occupants seeded (default 20000)
  --templates N        form templates seeded through HTTP (default 2000)
  --notifications N    notifications seeded (default 20000)
  --patch-pool N       active occupants seeded in a ward of their own for the discharge scenario
                       (default 300000, for some 17-20 rounds of the turns; the occupants the
                       create scenario admits are discharged first)
  --duration S         seconds per scenario (default 10)
  --warmup S           warm-up seconds before each scenario (default 3)
  --connections N      concurrent connections (default 50)
  --only a,b           run only these scenarios (get, get-oidc, list, list-bed, create, patch, ft-create, ft-get,
                       notifications, notif-unseen, notif-count, notif-seen, render, fanout, adt,
                       metrics: the service with its metrics on vs off)
  --fanout-streams N   open event streams in the live feed's fan-out (default 1000)
  --fanout-rates a,b   changes per second to measure the fan-out at (default 10,20,40,50)
  --fanout-seconds S   seconds per fan-out rate (default 10)
  --compare N          afterwards, seed N occupants (e.g. 1000000) on a second server and compare the lists
  --compare-notifications N   notifications on that second server (default 1000000), to compare the
                       notification scenarios with the main run's
  --no-peer            skip the Feathers peer (bench/peer/), which otherwise takes a third turn beside
                       the service and the database limit in get, list, create and patch (those of them
                       --only keeps), on a copy of the same rows, for the × peer column
  --log-level L        the service's LOG_LEVEL (default warn)
  --profile DIR        run the service with --cpu-prof, profiles written to DIR
  --verbose            show the service's own output
  --no-write           print the table only, leave docs/PERFORMANCE.md alone`

export const { values: args } = parseArgs({
  options: {
    occupants: { type: 'string', default: '20000' },
    templates: { type: 'string', default: '2000' },
    notifications: { type: 'string', default: '20000' },
    'patch-pool': { type: 'string', default: '300000' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    only: { type: 'string' },
    compare: { type: 'string' },
    'compare-notifications': { type: 'string', default: '1000000' },
    'fanout-streams': { type: 'string', default: '1000' },
    'fanout-rates': { type: 'string', default: '10,20,40,50' },
    'fanout-seconds': { type: 'string', default: '10' },
    'log-level': { type: 'string', default: 'warn' },
    profile: { type: 'string' },
    verbose: { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    'no-peer': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
})
if (args.help) {
  console.log(HELP)
  process.exit(0)
}

export const options = {
  occupants: Number(args.occupants),
  templates: Number(args.templates),
  notifications: Number(args.notifications),
  patchPool: Number(args['patch-pool']),
  duration: Number(args.duration),
  warmup: Number(args.warmup),
  connections: Number(args.connections),
  logLevel: args['log-level'],
  only: args.only ? new Set(args.only.split(',')) : null,
  compare: args.compare ? Number(args.compare) : null,
  compareNotifications: Number(args['compare-notifications']),
}
