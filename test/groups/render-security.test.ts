import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'render-security', in one process.
await runGroup(t, 'render-security')
