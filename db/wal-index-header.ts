import { closeSync, openSync, readSync } from 'node:fs'
import type { Database } from 'better-sqlite3'
import { openedElsewhere } from './descriptors.js'

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
  /**
   * Closes the file once the connection is closed, unless another connection of this process
   * still has it open (see below): then it stays open until the process ends.
   */
  release(): void
}

/**
 * A cheap way to know that no connection has committed since a moment: one `pread` of the header
 * where a read transaction (what `PRAGMA data_version` needs) takes about five system calls (WAL
 * and database locks taken and given back, the file's size). Null when the connection has no
 * WAL-index file to read (in memory, not in WAL mode, exclusive locking); `unchangedSinceMark()`
 * stays false when the file cannot be opened or is not the one this process's SQLite has open.
 *
 * The file is opened at the first `mark()`. Its descriptor is closed only when no other
 * descriptor of this process is open on it: the locks SQLite holds on the `-shm` file are POSIX
 * record locks, which belong to the process, and closing *any* descriptor of that file drops them
 * all, those of every connection of this process included.
 */
export function watchCommits(db: Database): CommitWatch | null {
  if (db.memory) return null
  const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase()
  const locking = String(db.pragma('locking_mode', { simple: true })).toLowerCase()
  if (mode !== 'wal' || locking !== 'normal') return null
  const main = (db.pragma('database_list') as { name: string; file: string }[]).find((row) => row.name === 'main')
  if (!main?.file) return null
  const path = `${main.file}-shm`
  let fd: number | null | undefined // undefined: not opened yet; null: not to be read
  const saved = Buffer.alloc(HEADER_BYTES)
  const now = Buffer.alloc(HEADER_BYTES)
  let marked = false

  function open(): number | null {
    // A read transaction first: the connection then has its -shm file open and mapped.
    db.pragma('data_version')
    try {
      const opened = openSync(path, 'r')
      // Only the very file SQLite maps tells its commits (the path could name a newer one).
      if (openedElsewhere(opened, false)) return opened
      closeSync(opened) // SQLite has no descriptor of it: no lock of ours to drop
    } catch {
      // unreadable: every request reads the pragma
    }
    return null
  }

  return {
    mark() {
      if (fd === undefined) fd = open()
      marked = fd !== null && readSync(fd, saved, 0, HEADER_BYTES, 0) === HEADER_BYTES
    },
    unchangedSinceMark() {
      return marked && fd != null && readSync(fd, now, 0, HEADER_BYTES, 0) === HEADER_BYTES && now.equals(saved)
    },
    release() {
      marked = false
      if (fd != null && !openedElsewhere(fd, true)) closeSync(fd)
      fd = null
    },
  }
}
