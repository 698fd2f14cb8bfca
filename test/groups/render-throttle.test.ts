import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'render-throttle', in one process.
await runGroup(t, 'render-throttle')
