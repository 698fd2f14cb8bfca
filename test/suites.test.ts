import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { PROJECT_ROOT } from '../lib/product-files.js'
import { GROUPS, runnerOf } from './groups.js'
import {
  filesByScript,
  filesCiMisses,
  readProject,
  scriptsCalled,
  scriptsCiMisses,
  scriptsRunBy,
  TAKES_TAP,
  tapCommands,
  testFiles,
  withGroupMembers,
} from './suites.js'

/**
 * Nothing may fall between the scripts: every test file, of every kind, runs in an npm script that
 * CI (.ci/run) runs, and every script that runs tests is run by CI. `npm test` leaves the long
 * suites out (package.json's tap.exclude) for scripts of their own, and every property test is in
 * the deep run. The files and the scripts' globs are read as they are, so a new kind of test file
 * or a new script is checked without being listed here.
 */
const { pkg, ci } = readProject(PROJECT_ROOT)
const files = [...testFiles(PROJECT_ROOT)].sort()
const groups = new Map(Object.entries(GROUPS).map(([name, members]) => [runnerOf(name), members]))
const grouped = [...groups.values()].flat().sort()
const byScript = filesByScript(PROJECT_ROOT, pkg, groups)
const ciScripts = scriptsRunBy(ci)
const LONG_SCRIPTS = ['test:long', 'crash-test', 'test:processes']

t.test('every test file runs in a script CI runs, and every test script runs in CI', async (t) => {
  t.ok(files.length > 100, `${files.length} test files found`)
  for (const kind of ['test', 'release', 'drill', 'browser', 'fault']) {
    t.ok(
      files.some((file) => file.endsWith(`.${kind}.ts`)),
      `*.${kind}.ts files are found`,
    )
  }
  t.same(filesCiMisses(files, byScript, ciScripts), [], 'no test file is left out of CI')
  t.same(scriptsCiMisses(byScript, ciScripts), [], 'no test script is left out of CI')
  t.ok(ciScripts.has('test') && ciScripts.has('test:coverage'), 'CI runs npm test and the coverage run')
  t.ok(ciScripts.has('test:processes'), 'CI runs the process suites on their own too (on Node 22)')
})

t.test('each test file left out of npm test runs in a script of its own, and only there', async (t) => {
  const excluded = pkg.tap.exclude.filter((file) => !grouped.includes(file)).sort()
  const long = LONG_SCRIPTS.flatMap((script) => [...(byScript.get(script) ?? [])]).sort()
  t.same(long, excluded, `${LONG_SCRIPTS.join(' and ')} run exactly what npm test leaves out (its groups apart)`)
  for (const file of excluded) t.ok(files.includes(file), `${file} exists`)
  const both = new Set([...(byScript.get('test') ?? []), ...(byScript.get('test:processes') ?? [])])
  t.same(byScript.get('test:coverage'), both, 'the coverage run runs what npm test and test:processes run')
})

t.test('a file npm test runs in a group runs there only, and once', async (t) => {
  t.same([...new Set(grouped)].sort(), grouped, 'no file is in two groups')
  for (const [runner, members] of groups) {
    t.ok(files.includes(runner), `${runner} exists and takes tap's root test`)
    t.ok(members.length > 1, `${runner} groups more than one file`)
  }
  for (const file of grouped) {
    t.ok(files.includes(file) && !groups.has(file), `${file} is a test file, not a runner`)
    t.ok(pkg.tap.exclude.includes(file), `${file} is in tap.exclude, so tap does not run it a second time`)
    t.notOk(
      LONG_SCRIPTS.some((script) => byScript.get(script)?.has(file)),
      `${file} is not a long suite's`,
    )
  }
})

// In a group the root test is shared: a hook or plan set on it by one file would act on the others.
const SETS_THE_ROOT =
  /^(t|tap)\.(before|beforeEach|after|afterEach|teardown|plan|setTimeout|jobs)\b|process\.(on|once)\(/m

t.test('a grouped file sets no hook, plan or handler on the shared process', async (t) => {
  for (const file of grouped) t.notMatch(readFileSync(join(PROJECT_ROOT, file), 'utf8'), SETS_THE_ROOT, file)
  t.match('t.beforeEach(() => {})\n', SETS_THE_ROOT, 'a root hook is caught')
  t.notMatch('  t.teardown(() => app.close())\n', SETS_THE_ROOT, "a subtest's teardown is not")
})

t.test('every property test is in the deep run', async (t) => {
  const properties = files.filter((file) =>
    /^import [^\n]* from 'fast-check'/m.test(readFileSync(join(PROJECT_ROOT, file), 'utf8')),
  )
  t.same([...(byScript.get('test:deep') ?? [])].sort(), properties)
  t.match(pkg.scripts['test:deep'], /^FUZZ_RUNS=\d+ /, 'at a depth of its own')
})

// The checks above pass on a correct project; these show they fail on a wrong one.
t.test('a file in no script, or in a script CI does not run, is caught', async (t) => {
  const scripts = new Map([
    ['test', new Set(['test/a.test.ts'])],
    ['fault-test', new Set(['test/b.fault.ts'])],
  ])
  const ran = scriptsRunBy('npm test\n# npm run fault-test\n')
  t.same([...ran], ['test'], 'a commented-out line runs nothing')
  t.same(filesCiMisses(['test/a.test.ts', 'test/b.fault.ts', 'test/c.listen.ts'], scripts, ran), [
    'test/b.fault.ts',
    'test/c.listen.ts',
  ])
  t.same(scriptsCiMisses(scripts, ran), ['fault-test'])
  t.same(scriptsCiMisses(scripts, scriptsRunBy('npm test\nnpm run fault-test\n')), [])
})

t.test('a file run by a group is run, and one excluded from tap and in no group is caught', async (t) => {
  const runner = 'test/groups/x.test.ts'
  const groups = new Map([[runner, ['test/a.test.ts', 'test/b.test.ts']]])
  const run = withGroupMembers(new Set([runner, 'test/d.test.ts']), groups)
  t.same([...run].sort(), ['test/a.test.ts', 'test/b.test.ts', 'test/d.test.ts', runner])
  const all = ['test/a.test.ts', 'test/b.test.ts', 'test/c.test.ts', 'test/d.test.ts', runner]
  t.same(filesCiMisses(all, new Map([['test', run]]), new Set(['test'])), ['test/c.test.ts'])
})

t.test('an alias of files CI runs elsewhere is no missing script', async (t) => {
  const scripts = new Map([
    ['test:long', new Set(['test/a.test.ts', 'test/b.test.ts'])],
    ['lint:openapi', new Set(['test/b.test.ts'])],
  ])
  t.same(scriptsCiMisses(scripts, scriptsRunBy('npm run test:long')), [])
  t.same(scriptsCiMisses(scripts, scriptsRunBy('npm run lint:openapi')), ['test:long'])
  t.same([...scriptsRunBy(`X=1 node scripts/timed.mjs 'npm test' '&' 'npm run test:long'`)], ['test', 'test:long'])
})

t.test('the tap commands of a script are read with their files', async (t) => {
  t.same(
    tapCommands("node scripts/timed.mjs 'npm run lint' 'node scripts/tap-build.mjs' 'c8 tap --disable-coverage'"),
    [[]],
  )
  t.same(tapCommands('FUZZ_RUNS=9 tap --jobs=1 test/x/*.drill.ts test/y.test.ts && tap build'), [
    ['test/x/*.drill.ts', 'test/y.test.ts'],
  ])
  t.same(tapCommands('stryker run'), [])
  t.same(tapCommands(`c8 sh -c "tap --jobs=2 && npm run test:processes"`), [[]], 'inside a shell of c8')
  t.same(tapCommands(`c8 node scripts/timed.mjs "tap --jobs=2" "&" "npm run test:processes"`), [[]], 'beside another')
})

t.test('a script runs the files of the scripts it runs', async (t) => {
  t.same(scriptsCalled(`c8 sh -c "tap && npm run test:processes" && npm run -s x:y`), ['test:processes', 'x:y'])
  t.same(scriptsCalled(`c8 node scripts/timed.mjs "tap" "&" "npm run test:processes"`), ['test:processes'])
  const root = t.testdir({ test: { 'a.test.ts': '', 'b.test.ts': '', 'c.test.ts': '' } })
  const scripts = {
    cover: `c8 sh -c "tap && npm run slow"`,
    slow: 'tap test/b.test.ts && npm run slower',
    slower: 'tap test/c.test.ts && npm run cover',
  }
  const byScript = filesByScript(
    root,
    { scripts, tap: { include: ['test/*.test.ts'], exclude: ['test/b.test.ts', 'test/c.test.ts'] } },
    new Map(),
  )
  t.same([...(byScript.get('cover') ?? [])].sort(), ['test/a.test.ts', 'test/b.test.ts', 'test/c.test.ts'])
  t.same(
    [...(byScript.get('slow') ?? [])].sort(),
    ['test/a.test.ts', 'test/b.test.ts', 'test/c.test.ts'],
    'a cycle ends',
  )
})

t.test('a test file is told from a helper by how it imports tap', async (t) => {
  for (const line of [
    "import t from 'tap'",
    "import t, { type Test } from 'tap'",
    "import { test } from 'tap'",
    // test/hl7/connection-cap.test.ts: was taken for a helper, so no check saw where it ran.
    "import { type Test, test } from 'tap'",
  ])
    t.ok(TAKES_TAP.test(line), `a test file: ${line}`)
  for (const line of [
    "import type { Test } from 'tap'",
    "import { type Test } from 'tap'",
    "import { type Test, type Fixture } from 'tap'",
    "import t from 'tape'",
  ])
    t.notOk(TAKES_TAP.test(line), `no test file: ${line}`)
})
