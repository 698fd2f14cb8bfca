#!/usr/bin/env node
/**
 * Builds tap's Test class for package.json's plugin list (`tap build`) when the installed one was
 * built for another list; does nothing otherwise (it is run before every test script, and in
 * worktrees that share node_modules files a rebuild rewrites them).
 *
 * Why: `npm ci` installs tap built with its default plugins, @tapjs/typescript among them, which
 * package.json turns off (tsx loads the sources). tap notices and rebuilds on its first run, but only
 * after it has fixed the flags of that run's test processes: on a fresh clone every test process of
 * the first `npm test` also loaded ts-node, about 0.7 s of CPU each (docs/TESTING.md, "Where the time goes").
 */
import { spawnSync } from 'node:child_process'
import { TapConfig } from '@tapjs/config'
import { signature } from '@tapjs/test'

const config = await TapConfig.load()
if (config.pluginSignature !== signature) {
  const result = spawnSync('tap', ['build'], { stdio: 'inherit', shell: true })
  process.exit(result.status ?? 1)
}
