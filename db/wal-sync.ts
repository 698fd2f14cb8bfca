import { close, closeSync, fdatasync, fstatSync, openSync, realpathSync } from 'node:fs'
import { promisify } from 'node:util'
import { openedElsewhere } from './descriptors.js'

/**
 * The fsync of a commit, done off the event loop. With `synchronous=NORMAL` in WAL mode SQLite
 * writes each commit's frames to the WAL file (into the operating system's cache) and returns
 * without waiting for the disk; an `fdatasync` of that file afterwards makes every frame written
 * before it durable, which is what `synchronous=FULL` does inside COMMIT (SQLite syncs the WAL
 * itself before a checkpoint copies it back, and the database file after). Here the sync runs in
 * libuv's thread pool, so the event loop goes on with the next requests while the disk works; the
 * write queue holds every answer until the sync that covers it is done (write-queue.ts).
 */
export interface WalSync {
  /** Resolves once every commit that returned before this call is on disk. */
  sync(): Promise<void>
  /** Closes the file; call once nothing syncs any more. */
  close(): void
}

const datasync = promisify(fdatasync)

/**
 * The WAL file of the database at `databasePath`, opened now: after a symbolic link, where SQLite
 * keeps it (beside the file the link points to), and checked to be the very file this process's
 * connection has open. Throws when it is not: syncing another file would prove nothing.
 */
export function openWalSync(databasePath: string): WalSync {
  const walPath = `${realpathSync(databasePath)}-wal`
  const fd = openSync(walPath, 'r+')
  if (!openedElsewhere(fd)) {
    closeSync(fd)
    throw new Error(`${walPath} is not the WAL file the database connection writes`)
  }
  let closed = false
  return {
    async sync() {
      if (closed) throw new Error(`${walPath} was closed`)
      await datasync(fd)
      // The WAL is never unlinked while the connection is open; if something did (a person
      // deleting files under a running server), this synced a file nobody reads any more. An
      // fstat reads the inode in memory and never waits for the disk: asked here, on the event
      // loop, it spares each commit a second trip through the thread pool before its answer.
      if (fstatSync(fd).nlink === 0) throw new Error(`${walPath} was removed under the server`)
    },
    close() {
      if (closed) return
      closed = true
      close(fd, () => {})
    },
  }
}
