import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'routes-lists', in one process.
await runGroup(t, 'routes-lists')
