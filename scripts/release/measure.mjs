#!/usr/bin/env node
// npm run release:measure [-- RUNS]: start-up and memory of the single executable beside
// `node dist/server.js`, in one run on this machine (shared machines vary: compare the ratios).
// For each: time from exec to the first 200 from /health, and RSS two seconds after that; on a first
// start (new database, and for the executable an empty cache to write its addon and files to) and
// on a restart (both there). Medians of RUNS (default 7). Nothing here is a test: no limit fails.
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCommand } from '../start-command.mjs'
import { releaseNode } from './node.mjs'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const RUNS = Number(process.argv[2] ?? 7)
const sleep = (ms) => new Promise((done) => setTimeout(done, ms))

function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => done(port))
    })
  })
}

async function healthy(base) {
  try {
    return (await fetch(`${base}/health`, { signal: AbortSignal.timeout(200) })).status === 200
  } catch {
    return false
  }
}

// Node's flags in `npm start`, which the executable carries too (build.mjs), and the environment
// it sets before `node` (MALLOC_ARENA_MAX), which the release's unit sets for the executable: both
// subjects are started with it.
const { flags: START_FLAGS, env: START_ENV } = startCommand()

const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])

/** One start: ms from exec to /health 200, and RSS in MB two seconds later. */
async function startOnce(command, args, cwd, home) {
  const port = await freePort()
  const env = {
    ...START_ENV,
    PATH: '/nonexistent',
    HOME: home,
    DATABASE_PATH: join(home, 'data', 'f.db'),
    PORT: String(port),
    LOG_LEVEL: 'warn',
  }
  const started = performance.now()
  const child = spawn(command, args, { cwd, env, stdio: 'ignore' })
  while (!(await healthy(`http://127.0.0.1:${port}`))) {
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}`)
    await sleep(5)
  }
  const ms = performance.now() - started
  await sleep(2000)
  const rss = rssKb(child.pid) / 1024
  child.kill('SIGTERM')
  await new Promise((done) => child.once('exit', done))
  return { ms, rss }
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function main() {
  const { name } = JSON.parse(readFileSync(join(ROOT, 'release', 'build-info.json'), 'utf8'))
  const work = mkdtempSync(join(tmpdir(), 'facility-measure-'))
  copyFileSync(join(ROOT, 'release', name), join(work, 'facility-service'))
  const node = releaseNode(join(ROOT, 'release'))
  const subjects = [
    { label: `${name} (Node ${node.version})`, command: join(work, 'facility-service'), args: ['serve'], cwd: work },
    {
      label: `node dist/server.js (npm's Node ${process.version})`,
      command: process.execPath,
      args: [...START_FLAGS, 'dist/server.js'],
      cwd: ROOT,
    },
    {
      label: `node dist/server.js (Node ${node.version}, the executable’s)`,
      command: node.bin,
      args: [...START_FLAGS, 'dist/server.js'],
      cwd: ROOT,
    },
  ]
  const results = subjects.map(() => ({ first: [], restart: [] }))
  try {
    for (let run = 0; run < RUNS; run++) {
      for (const [i, subject] of subjects.entries()) {
        const home = join(work, `home-${i}`)
        rmSync(home, { recursive: true, force: true })
        mkdirSync(home)
        results[i].first.push(await startOnce(subject.command, subject.args, subject.cwd, home))
        results[i].restart.push(await startOnce(subject.command, subject.args, subject.cwd, home))
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  const base = median(results[1].restart.map((r) => r.ms))
  console.log(
    `| ${RUNS} runs, medians | first start: exec → /health | restart: exec → /health | RSS 2 s after start | restart time vs npm |`,
  )
  console.log('| --- | --- | --- | --- | --- |')
  for (const [i, subject] of subjects.entries()) {
    const first = median(results[i].first.map((r) => r.ms))
    const restart = median(results[i].restart.map((r) => r.ms))
    const rss = median(results[i].restart.map((r) => r.rss))
    console.log(
      `| ${subject.label} | ${first.toFixed(0)} ms | ${restart.toFixed(0)} ms | ${rss.toFixed(0)} MB | ${(restart / base).toFixed(2)}× |`,
    )
  }
}

await main()
