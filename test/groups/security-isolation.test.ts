import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'security-isolation', in one process.
await runGroup(t, 'security-isolation')
