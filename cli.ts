#!/usr/bin/env node
// The executable (package.json `bin`): the tool itself is cli/, run here on this process's
// arguments and streams. Tests call runCli from cli/run.ts instead. The Node version is checked
// before the tool loads (dynamic imports: static ones would be evaluated first, and an unsupported
// Node crashes in the SQLite addon without a word).
import { refuseUnsupportedNode } from './lib/supported-node.js'

refuseUnsupportedNode()
const { processIo } = await import('./cli/io.js')
const { runCli } = await import('./cli/run.js')
process.exitCode = await runCli(process.argv.slice(2), processIo)
