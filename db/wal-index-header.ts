import { openSync, readSync } from 'node:fs'
import type { Database } from 'better-sqlite3'

// The WAL-index header: the first 96 bytes of the database's `-shm` file, two copies of the
// 48-byte header that every commit of every connection rewrites (its change counter, last frame,
// checksums; https://sqlite.org/walformat.html). The 40 bytes after them (read marks, checkpoint
// progress) change with readers and checkpoints, not with commits, and are not read.
const HEADER_BYTES = 96

export interface CommitWatch {
  /** Remember the header as it is now. */
  mark(): void
  /** True only if the header is byte for byte what `mark()` saw: no connection has committed since. */
  unchangedSinceMark(): boolean
}

/**
 * A cheap way to know that no connection has committed since a moment: one `pread` of the header
 * where a read transaction (what `PRAGMA data_version` needs) takes about five system calls (WAL
 * and database locks taken and given back, the file's size). Null when the connection has no
 * WAL-index file to read (in memory, not in WAL mode, exclusive locking).
 *
 * The descriptor is never closed, on purpose: the locks SQLite holds on the `-shm` file are POSIX
 * record locks, which belong to the process, and closing *any* descriptor of that file drops them
 * all, those of every connection of this process included. One descriptor per connection that
 * asks, kept until the process ends (the server opens one connection for its life).
 */
export function watchCommits(db: Database): CommitWatch | null {
  if (db.memory) return null
  const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase()
  const locking = String(db.pragma('locking_mode', { simple: true })).toLowerCase()
  if (mode !== 'wal' || locking !== 'normal') return null
  const main = (db.pragma('database_list') as { name: string; file: string }[]).find((row) => row.name === 'main')
  if (!main?.file) return null
  // A read transaction first: the -shm file exists after it, the one this connection maps.
  db.pragma('data_version')
  let fd: number
  try {
    fd = openSync(`${main.file}-shm`, 'r')
  } catch {
    return null
  }
  const saved = Buffer.alloc(HEADER_BYTES)
  const now = Buffer.alloc(HEADER_BYTES)
  let marked = false
  return {
    mark() {
      marked = readSync(fd, saved, 0, HEADER_BYTES, 0) === HEADER_BYTES
    },
    unchangedSinceMark() {
      return marked && readSync(fd, now, 0, HEADER_BYTES, 0) === HEADER_BYTES && now.equals(saved)
    },
  }
}
