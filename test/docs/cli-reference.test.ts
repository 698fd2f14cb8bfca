import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { buildProgram } from '../../cli/program.js'
import { PROJECT_ROOT } from '../../lib/product-files.js'
import { cliReference, commandsOf } from '../../scripts/docs/cli.js'

const FILE = 'docs/reference/CLI.md'
const committed = () => readFileSync(join(PROJECT_ROOT, FILE), 'utf8')
const silent = { out: () => {}, err: () => {} }

t.test(`${FILE} is the program's help as it is now`, async (t) => {
  t.equal(committed(), cliReference(), `${FILE} is stale: run npm run docs`)
})

t.test('every command and subcommand has its section', async (t) => {
  const headings = new Set(committed().match(/^## .*$/gm))
  const paths = [...commandsOf(buildProgram(silent))].map(([path]) => path)
  t.ok(paths.length > 20, 'the walk reaches the subcommands')
  for (const path of paths) t.ok(headings.has(`## ${['facility-service', ...path].join(' ')}`), path.join(' '))
})

t.test('every file of cli/commands/ is a command of the program', async (t) => {
  const commands = new Set(buildProgram(silent).commands.map((command) => command.name()))
  for (const file of readdirSync(join(PROJECT_ROOT, 'cli/commands')).filter((name) => name.endsWith('.ts')))
    t.ok(commands.has(file.replace(/\.ts$/, '')), `cli/commands/${file} is added in cli/program.ts`)
})
