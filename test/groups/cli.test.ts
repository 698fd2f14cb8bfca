import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'cli', in one process.
await runGroup(t, 'cli')
