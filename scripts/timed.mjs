#!/usr/bin/env node
/**
 * `node scripts/timed.mjs 'command' 'command' ...`: runs each command through the shell, one after
 * the other, stops at the first that fails, and prints how long each took and the whole, so that
 * `npm test` ends with its elapsed time (the README promises five minutes; this is how a newcomer
 * sees whether it holds). CPU time (user + system of every process the commands started) is
 * printed beside the wall time: on a machine shared with other work it moves much less.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { constants } from 'node:os'

const commands = process.argv.slice(2)
if (commands.length === 0) {
  console.error('usage: node scripts/timed.mjs <command> [command ...]')
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

const seconds = (ms) => `${Math.round(ms / 1000)} s`
const cpu = (s) => (s === undefined ? '' : `, CPU ${Math.round(s)} s`)
const started = performance.now()
const cpuStarted = childrenCpu()
const steps = []
let status = 0
for (const command of commands) {
  const stepStarted = performance.now()
  const cpuBefore = childrenCpu()
  const result = spawnSync(command, { shell: true, stdio: 'inherit' })
  const cpuAfter = childrenCpu()
  const used = cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore
  steps.push(`${command}: ${seconds(performance.now() - stepStarted)}${cpu(used)}`)
  status = result.status ?? 128 + (constants.signals[result.signal] ?? 0)
  if (status !== 0) break
}
const cpuEnded = childrenCpu()
const cpuTotal = cpuStarted === undefined || cpuEnded === undefined ? undefined : cpuEnded - cpuStarted
const outcome = status === 0 ? 'done' : `failed (exit ${status})`
console.log(`\n${outcome} in ${seconds(performance.now() - started)}${cpu(cpuTotal)} (${steps.join('; ')})`)
process.exit(status)
