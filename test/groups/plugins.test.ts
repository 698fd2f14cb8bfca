import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'plugins', in one process.
await runGroup(t, 'plugins')
