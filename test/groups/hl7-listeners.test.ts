import t from 'tap'
import { runGroup } from '../groups.js'

// The files of test/groups.ts's group 'hl7-listeners', in one process.
await runGroup(t, 'hl7-listeners')
