import { close, fdatasync, fstat, open, type Stats } from 'node:fs'

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

type Callback<T> = (error: NodeJS.ErrnoException | null, value: T) => void

function promised<T>(start: (done: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))))
}

/** A WAL file's own descriptor, opened when first needed (the file exists once the database is open). */
export function createWalSync(walPath: string): WalSync {
  let fd: number | null = null

  async function descriptor(): Promise<number> {
    if (fd === null) fd = await promised<number>((done) => open(walPath, 'r+', done))
    return fd
  }

  async function syncOnce(): Promise<boolean> {
    const current = await descriptor()
    await promised<void>((done) => fdatasync(current, (error) => done(error, undefined)))
    // The WAL is never unlinked while the server's connection is open; if something did (a person
    // deleting files under a running server), the descriptor synced a file nobody reads any more.
    const stats = await promised<Stats>((done) => fstat(current, done))
    if (stats.nlink > 0) return true
    if (fd === current) fd = null
    close(current, () => {})
    return false
  }

  return {
    async sync() {
      if (!(await syncOnce()) && !(await syncOnce())) throw new Error(`${walPath} was removed under the server`)
    },
    close() {
      if (fd !== null) close(fd, () => {})
      fd = null
    },
  }
}
