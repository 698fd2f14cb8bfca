// THIRD-PARTY-NOTICES.txt: the license of everything the executable carries, generated from
// package-lock.json and what the bundler read (its metafile), never listed by hand:
// - Node.js itself (its LICENSE covers V8, OpenSSL, ICU, libuv ...), from the registry's package;
// - every package the bundles hold, plus those shipped as assets (the SQLite addon, the QuickJS
//   WebAssembly, the OpenAPI page's files), each checked against the lock file (present, and not a
//   development-only package), with the text of its own LICENSE/COPYING/NOTICE files;
// - a package that ships no license file gets its declared license's standard text (licenses/)
//   with its author as the holder, and the notice says so; no text at all fails the build;
// - SQLite's blessing from the amalgamation better-sqlite3 compiles, and swagger-ui's own license
//   files from the swagger-ui-dist release that @fastify/swagger-ui copied its page from (checked
//   to be the same bytes);
// - the legal comments esbuild collected from the bundled sources.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { lockKeyOf } from './bundle.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\b|[-_.]|$)/i
/** Shipped as assets rather than bundled code. */
const ASSET_PACKAGES = ['better-sqlite3', '@jitl/quickjs-wasmfile-release-sync', '@fastify/swagger-ui']
const RULE = '-'.repeat(78)

function holderOf(pkg) {
  const author = typeof pkg.author === 'string' ? pkg.author : pkg.author?.name
  return author ?? `the authors of ${pkg.name}`
}

/** The standard text of a declared license, for a package that ships none. */
function standardText(pkg, license) {
  const template = join(HERE, 'licenses', `${license}.txt`)
  if (!existsSync(template)) return undefined
  const text = readFileSync(template, 'utf8').replace('{{holder}}', holderOf(pkg)).trim()
  return {
    file: `${license} (the package ships no license file: the standard text, as its package.json declares)`,
    text,
  }
}

function noticeOf(root, key, lock, problems) {
  const meta = lock.packages[key]
  if (!meta) problems.push(`${key}: in the executable but not in package-lock.json`)
  else if (meta.dev) problems.push(`${key}: in the executable but a development-only package in package-lock.json`)
  const dir = join(root, key)
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const license = meta?.license ?? pkg.license ?? 'UNKNOWN'
  const texts = readdirSync(dir)
    .filter((file) => LICENSE_FILE.test(file))
    .map((file) => ({ file, text: readFileSync(join(dir, file), 'utf8').trim() }))
  if (texts.length === 0) {
    const standard = standardText(pkg, license)
    if (standard) texts.push(standard)
    else problems.push(`${key}: no license file, and no standard text for its license ${license}`)
  }
  return { title: `${pkg.name}@${pkg.version} (${license})`, texts }
}

/** SQLite's own notice (public domain, with a blessing) from the amalgamation the addon is built of. */
function sqliteNotice(root) {
  const header = readFileSync(join(root, 'node_modules/better-sqlite3/deps/sqlite3/sqlite3.h'), 'utf8')
  const blessing = header.slice(0, header.indexOf('*****')).trim()
  const version = /#define SQLITE_VERSION\s+"([^"]+)"/.exec(header)?.[1] ?? 'unknown'
  return {
    title: `SQLite ${version} (public domain), in better-sqlite3's addon`,
    texts: [{ file: 'sqlite3.h', text: blessing }],
  }
}

/**
 * swagger-ui's page (swagger-ui-bundle.js and its siblings) is a copy of the swagger-ui-dist
 * release named in @fastify/swagger-ui's package.json, whose license files @fastify/swagger-ui
 * does not ship; they are taken from that release (npm pack), after checking the files are the same.
 */
function swaggerUiNotice(root, cacheDir, problems) {
  const ui = join(root, 'node_modules/@fastify/swagger-ui')
  const version = JSON.parse(readFileSync(join(ui, 'package.json'), 'utf8')).devDependencies?.['swagger-ui-dist']
  const dir = join(cacheDir, `swagger-ui-dist-${version}`)
  const tarball = join(dir, `swagger-ui-dist-${version}.tgz`)
  if (!existsSync(tarball)) {
    mkdirSync(dir, { recursive: true })
    execFileSync('npm', ['pack', `swagger-ui-dist@${version}`, '--pack-destination', dir, '--silent'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
  }
  // Unpacked afresh each build: only the downloaded archive is kept between builds.
  rmSync(join(dir, 'package'), { recursive: true, force: true })
  execFileSync('tar', ['xzf', tarball, '-C', dir])
  const dist = join(dir, 'package')
  // @fastify/swagger-ui copies them without their source map comments.
  const withoutSourceMap = (file) =>
    readFileSync(file, 'utf8')
      .replace(/\/[*/]# sourceMappingURL=[^\s*]+\s*(\*\/)?\s*$/, '')
      .trimEnd()
  for (const file of ['swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-ui.css']) {
    if (withoutSourceMap(join(dist, file)) !== withoutSourceMap(join(ui, 'static', file))) {
      problems.push(
        `@fastify/swagger-ui's static/${file} is not swagger-ui-dist@${version}'s: its license files may not apply`,
      )
    }
  }
  const shippedBundleLicense = (file) =>
    file.endsWith('.LICENSE.txt') && existsSync(join(ui, 'static', file.slice(0, -'.LICENSE.txt'.length)))
  const texts = readdirSync(dist)
    // The release's own license files, and those of the bundles @fastify/swagger-ui ships.
    .filter((file) => LICENSE_FILE.test(file) || shippedBundleLicense(file))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(dist, file), 'utf8').trim() }))
  return { title: `swagger-ui-dist@${version} (Apache-2.0), the OpenAPI page's files in @fastify/swagger-ui`, texts }
}

/** Writes the notices to `out`; returns how many packages, and what is wrong (the build fails on any). */
export function writeNotices({ root, cacheDir, out, inputs, node, legalFiles }) {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
  const modules = realpathSync(join(root, 'node_modules'))
  const keys = new Set(ASSET_PACKAGES.map((name) => `node_modules/${name}`))
  for (const file of inputs) {
    const key = lockKeyOf(modules, file)
    if (key) keys.add(key)
  }
  const problems = []
  const notices = [...keys].sort().map((key) => noticeOf(root, key, lock, problems))
  notices.push(sqliteNotice(root), swaggerUiNotice(root, cacheDir, problems))
  const lines = [
    'THIRD-PARTY SOFTWARE NOTICES',
    '',
    'The facility-service executable contains Node.js and the software below.',
    '',
  ]
  lines.push(RULE, `Node.js ${node.version}`, RULE, readFileSync(node.license, 'utf8').trim(), '')
  for (const { title, texts } of notices) {
    lines.push(RULE, title, RULE)
    for (const { file, text } of texts) lines.push(`[${file}]`, text, '')
  }
  const legal = [...new Set(legalFiles.filter(existsSync).map((f) => readFileSync(f, 'utf8').trim()))].filter(Boolean)
  if (legal.length > 0)
    lines.push(RULE, 'Legal comments in the bundled sources (collected by esbuild)', RULE, ...legal, '')
  writeFileSync(out, `${lines.join('\n')}\n`)
  return { packages: keys.size, problems }
}
