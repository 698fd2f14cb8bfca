// The program `node dist/server.js` (`npm start`, a unit file): the Node version is checked before
// anything else loads, hence the dynamic import (static imports are evaluated first, and an
// unsupported Node crashes in the SQLite addon without a word). The server itself is start-server.ts.
import { refuseUnsupportedNode } from './lib/supported-node.js'

refuseUnsupportedNode()
const { startServer } = await import('./start-server.js')
await startServer(process.env)
