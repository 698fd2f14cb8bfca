#!/usr/bin/env node
/**
 * `node scripts/timed.mjs 'command' 'command' ...`: runs each step through the shell, one after
 * the other (a step is one command, or several joined by '&' that run together), stops at the
 * first that fails, and prints how long each took and the whole, so that `npm test` ends with its
 * elapsed time (the README promises five minutes; this is how a newcomer sees whether it holds).
 * CPU time (user + system of every process the commands started) is
 * printed beside the wall time: on a machine shared with other work it moves much less.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { constants } from 'node:os'
import { createInterface } from 'node:readline'

/**
 * Steps, each one command or several joined by a lone `&` argument (`'a' '&' 'b'`): the commands of
 * a step run at the same time, so that short single-threaded ones (lint beside tap's rebuild) keep
 * both cores busy; the next step starts when all of them have ended.
 */
const args = process.argv.slice(2)
const steps = []
for (const [i, arg] of args.entries()) {
  if (arg === '&') continue
  if (args[i - 1] === '&') steps.at(-1)?.push(arg)
  else steps.push([arg])
}
const misplaced = args.some((arg, i) => arg === '&' && (i === 0 || i === args.length - 1 || args[i + 1] === '&'))
if (steps.length === 0 || misplaced) {
  console.error("usage: node scripts/timed.mjs <command> ['&' <command> ...] [command ...]")
  process.exit(2)
}

/**
 * Seconds of CPU used by the children this process has waited for, and theirs (Linux counts a
 * child's waited-for descendants into it). Node reports only its own, so /proc's cutime and
 * cstime are read; USER_HZ is 100 on every Linux. Undefined elsewhere.
 */
function childrenCpu() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

/**
 * Runs a command, its output passed through as it comes. When the output is not a terminal (CI),
 * TAP lines are read on the way: a failed test's path (file, subtest, assertion) is kept, so that a
 * failure is named again at the end of a long log, where a CI that keeps only the tail shows it.
 */
function run(command) {
  const watch = !process.stdout.isTTY
  const child = spawn(command, { shell: true, stdio: ['inherit', watch ? 'pipe' : 'inherit', 'inherit'] })
  const failures = []
  if (watch) {
    const subtests = []
    createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      process.stdout.write(`${line}\n`)
      const depth = line.length - line.trimStart().length
      const subtest = /^\s*# Subtest: (.*)$/.exec(line)
      if (subtest) subtests[depth / 4] = subtest[1]
      const failed = /^\s*not ok \d+ - (.*?)(?: # .*)?$/.exec(line)
      if (failed) failures.push([...subtests.slice(0, depth / 4), failed[1]].join(' › '))
      if (/^\s*(not )?ok \d+/.test(line)) subtests.length = Math.min(subtests.length, depth / 4)
    })
  }
  return new Promise((resolve) => {
    child.on('close', (code, signal) => resolve({ status: code ?? 128 + (constants.signals[signal] ?? 0), failures }))
  })
}

const seconds = (ms) => `${Math.round(ms / 1000)} s`
const cpu = (s) => (s === undefined ? '' : `, CPU ${Math.round(s)} s`)
const started = performance.now()
const cpuStarted = childrenCpu()
const report = []
let status = 0
for (const step of steps) {
  const stepStarted = performance.now()
  const cpuBefore = childrenCpu()
  const results = await Promise.all(step.map((command) => run(command)))
  const cpuAfter = childrenCpu()
  const used = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore
  report.push(`${step.join(' & ')}: ${seconds(performance.now() - stepStarted)}${cpu(used)}`)
  const failed = results.findIndex((result) => result.status !== 0)
  if (failed !== -1) {
    status = results[failed].status
    for (const [i, result] of results.entries()) {
      if (result.status === 0) continue
      const named = result.failures.map((f) => `\n  not ok: ${f}`).join('')
      console.log(`\nfailed in ${step[i]} (exit ${result.status})${named ? `:${named}` : ''}`)
    }
    break
  }
}
const cpuEnded = childrenCpu()
const cpuTotal = cpuStarted === undefined || cpuEnded === undefined ? undefined : cpuEnded - cpuStarted
const outcome = status === 0 ? 'done' : `failed (exit ${status})`
console.log(`\n${outcome} in ${seconds(performance.now() - started)}${cpu(cpuTotal)} (${report.join('; ')})`)
process.exit(status)
