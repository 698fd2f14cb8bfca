/** A refusal the tool words itself: printed as it is, never taken for a storage fault. */
export class CliError extends Error {}

/** The code SQLite or the file system gave an error, to name it in a message. */
export function codeOf(error: unknown): string {
  return String((error as { code?: unknown }).code ?? 'error')
}
