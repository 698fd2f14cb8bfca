#!/usr/bin/env node
// The executable (package.json `bin`): the tool itself is cli/, run here on this process's
// arguments and streams. Tests call runCli from cli/run.ts instead.
import { processIo } from './cli/io.js'
import { runCli } from './cli/run.js'

process.exitCode = await runCli(process.argv.slice(2), processIo)
