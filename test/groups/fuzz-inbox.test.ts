import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'fuzz-inbox', in one process.
await runGroup(t, 'fuzz-inbox')
