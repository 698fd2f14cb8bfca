import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'routes-notifications', in one process.
await runGroup(t, 'routes-notifications')
