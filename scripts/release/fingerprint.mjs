// What a release is built from, as one checksum: every file git knows (tracked, or new and not
// ignored) except tests and docs other than those shipped, plus the installed lock file. The
// release test rebuilds when it differs from the last build's (release/build-info.json).
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, lstatSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const IGNORED = /^(test|bench|\.ci)\//

export function sourceFingerprint(root) {
  const listed = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
  const hash = createHash('sha256')
  for (const file of listed.split('\0').filter(Boolean).sort()) {
    // A file deleted but not yet staged is gone; node_modules may be a symbolic link.
    if (IGNORED.test(file) || !existsSync(join(root, file)) || !lstatSync(join(root, file)).isFile()) continue
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(root, file)))
      .update('\0')
  }
  const installed = join(root, 'node_modules', '.package-lock.json')
  if (existsSync(installed)) hash.update(readFileSync(installed))
  return hash.digest('hex')
}
