// npm run test:count: how many test files and test functions (t.test call sites, each one behaviour
// or one generated family of cells) the suite has, and how many of them are property-based.
// tap's assertion total says little: one matrix test makes thousands of assertions.
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

const root = new URL('.', import.meta.url).pathname
function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    // test/groups/ holds runners that import other test files (test/groups.ts): no tests of their own.
    if (entry.isDirectory()) {
      if (path !== join(root, 'groups')) yield* files(path)
    } else if (entry.name.endsWith('.test.ts') || entry.name.endsWith('.browser.ts')) yield path
  }
}
const rows = []
for (const path of files(root)) {
  const text = readFileSync(path, 'utf8')
  rows.push({
    file: relative(root, path),
    tests: (text.match(/\bt\.test\(/g) ?? []).length,
    properties: (text.match(/fc\.(async)?[pP]roperty\(/g) ?? []).length,
  })
}
rows.sort((a, b) => a.file.localeCompare(b.file))
const byFolder = new Map()
for (const row of rows) {
  const folder = row.file.includes('/') ? row.file.split('/')[0] : '.'
  const sum = byFolder.get(folder) ?? { files: 0, tests: 0, properties: 0 }
  byFolder.set(folder, {
    files: sum.files + 1,
    tests: sum.tests + row.tests,
    properties: sum.properties + row.properties,
  })
}
if (process.argv.includes('--files')) for (const r of rows) console.log(`${String(r.tests).padStart(4)} ${r.file}`)
for (const [folder, sum] of byFolder) {
  console.log(
    `${folder.padEnd(12)} ${String(sum.files).padStart(3)} files ${String(sum.tests).padStart(4)} test functions ${String(sum.properties).padStart(3)} properties`,
  )
}
const total = rows.reduce((s, r) => ({ tests: s.tests + r.tests, properties: s.properties + r.properties }), {
  tests: 0,
  properties: 0,
})
console.log(
  `total        ${String(rows.length).padStart(3)} files ${String(total.tests).padStart(4)} test functions ${String(total.properties).padStart(3)} properties`,
)
