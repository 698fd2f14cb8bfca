import { execFileSync } from 'node:child_process'
import t from 'tap'

// Which Node runs the suite is decided by PATH (npm scripts put node_modules/.bin, with the
// registry's Node 26, first). CI sets EXPECT_NODE_MAJOR per phase so a silent fall-back to another
// Node (the machine's 20, or 26 in the Node 22 phase) fails the run instead of passing unnoticed.
const major = (version: string) => Number(version.replace(/^v/, '').split('.')[0])

t.test('the test process runs on a supported Node', async (t) => {
  t.comment(`test process: Node ${process.version}`)
  t.ok([22, 24, 26].includes(major(process.version)), `${process.version} is 22, 24 or 26`)
  const expected = process.env.EXPECT_NODE_MAJOR
  if (expected) t.equal(major(process.version), Number(expected), `Node ${expected} as CI expects`)
})

t.test(
  'a child spawned through PATH (as bin scripts with `#!/usr/bin/env node` are) runs on the same Node',
  async (t) => {
    const onPath = execFileSync('node', ['-p', 'process.version'], { encoding: 'utf8' }).trim()
    t.equal(major(onPath), major(process.version), `PATH node ${onPath}, test process ${process.version}`)
  },
)
