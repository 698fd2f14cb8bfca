/** Runs `body` under `mask`, then restores the umask the test process had. */
export function withUmask<T>(mask: number, body: () => T): T {
  const before = process.umask(mask)
  try {
    return body()
  } finally {
    process.umask(before)
  }
}
