/**
 * Which npm script runs which test file, and which scripts CI runs: read from package.json and
 * .ci/run as they are, for test/suites.test.ts. Pure functions over their text, so that test can
 * also show them catching a file in no script and a script CI never runs.
 */
import { globSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

export interface Pkg {
  scripts: Record<string, string>
  tap: { include: string[]; exclude: string[] }
}

/**
 * A test file is what tap runs as one: a module under test/ that takes tap's root test (`import t
 * from 'tap'`, or `import { test } from 'tap'`, a type beside it or not), whatever its name (`*.test.ts`, `*.release.ts`, `*.drill.ts`, `*.browser.ts`,
 * `*.fault.ts`, or a kind not made yet). Helpers import tap's types only.
 */
export const TAKES_TAP =
  /^import\s+(?!type\b)(\w+\s*(,\s*\{[^}]*\}\s*)?|\{(?=(?:[^}]*,)?\s*(?!type\s+\w)\w)[^}]*\}\s*)from\s+'tap'/m

export function* testFiles(root: string, dir = join(root, 'test')): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) yield* testFiles(root, path)
    else if (/\.[cm]?[jt]s$/.test(entry.name) && TAKES_TAP.test(readFileSync(path, 'utf8'))) yield relative(root, path)
  }
}

/**
 * The file arguments of each `tap` command in a script (quoted steps of scripts/timed.mjs
 * included); an empty list for a `tap` without files, which runs package.json's tap.include less
 * tap.exclude. Options (`--jobs=1`) and a `tap build` are not files.
 */
export function tapCommands(script: string): string[][] {
  const commands: string[][] = []
  for (const match of script.matchAll(/(?:^|[\s'"])tap(?=[\s'"]|$)((?:[ \t]+[^\s'"&|;]+)*)/g)) {
    const words = (match[1] ?? '').trim().split(/\s+/).filter(Boolean)
    if (words[0] === 'build') continue
    commands.push(words.filter((word) => !word.startsWith('-')))
  }
  return commands
}

const expand = (root: string, patterns: string[]) => new Set(patterns.flatMap((p) => globSync(p, { cwd: root })))

/** A group's runner and the files it runs in its process (test/groups.ts). */
export type Groups = Map<string, readonly string[]>

/** The files run, with the files of every group runner among them (a file run by a group is run). */
export function withGroupMembers(files: Set<string>, groups: Groups): Set<string> {
  const all = new Set(files)
  for (const file of files) for (const member of groups.get(file) ?? []) all.add(member)
  return all
}

/** The npm scripts a script runs itself (`npm run <name>`), in the order written. */
export function scriptsCalled(script: string): string[] {
  return [...script.matchAll(/(?:^|[\s;&|('"])npm run(?: -s)? ([\w:.-]+)/g)].map((match) => match[1] as string)
}

/**
 * The test files each script runs, for every script that runs tap, group members included, and
 * those of the scripts it runs (`npm run test:processes` inside the coverage run).
 */
export function filesByScript(root: string, pkg: Pkg, groups: Groups): Map<string, Set<string>> {
  const own = new Map<string, Set<string>>()
  for (const [name, script] of Object.entries(pkg.scripts)) {
    const commands = tapCommands(script)
    if (commands.length === 0) continue
    const files = new Set<string>()
    for (const args of commands) {
      if (args.length > 0) for (const file of expand(root, args)) files.add(file)
      else {
        const excluded = expand(root, pkg.tap.exclude)
        for (const file of expand(root, pkg.tap.include)) if (!excluded.has(file)) files.add(file)
      }
    }
    own.set(name, withGroupMembers(files, groups))
  }
  const byScript = new Map<string, Set<string>>()
  for (const name of own.keys()) {
    const files = new Set<string>()
    const seen = new Set<string>()
    const visit = (script: string) => {
      if (seen.has(script)) return
      seen.add(script)
      for (const file of own.get(script) ?? []) files.add(file)
      for (const called of scriptsCalled(pkg.scripts[script] ?? '')) visit(called)
    }
    visit(name)
    byScript.set(name, files)
  }
  return byScript
}

/** The npm scripts a CI script runs (`npm test`, `npm run <name>`, quoted steps of scripts/timed.mjs too), comments left out. */
export function scriptsRunBy(ci: string): Set<string> {
  const run = new Set<string>()
  for (const line of ci.split('\n')) {
    const code = line.replace(/(^|\s)#.*$/, '')
    if (/(^|[\s;&|('"])npm (test|t)\b/.test(code)) run.add('test')
    for (const script of scriptsCalled(code)) run.add(script)
  }
  return run
}

/** The test files no script runs that CI runs. */
export function filesCiMisses(files: string[], byScript: Map<string, Set<string>>, ciScripts: Set<string>): string[] {
  return files.filter((file) => ![...ciScripts].some((script) => byScript.get(script)?.has(file)))
}

/**
 * The scripts that run tests and that CI never runs, unless every file they run is run by one CI
 * does run (an alias such as `lint:openapi`, one file of `test:long`).
 */
export function scriptsCiMisses(byScript: Map<string, Set<string>>, ciScripts: Set<string>): string[] {
  const inCi = new Set([...ciScripts].flatMap((script) => [...(byScript.get(script) ?? [])]))
  return [...byScript]
    .filter(([script, files]) => !ciScripts.has(script) && (files.size === 0 || [...files].some((f) => !inCi.has(f))))
    .map(([script]) => script)
}

export function readProject(root: string): { pkg: Pkg; ci: string } {
  return {
    pkg: JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Pkg,
    ci: readFileSync(join(root, '.ci', 'run'), 'utf8'),
  }
}
