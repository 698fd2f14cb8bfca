import { readFile } from 'node:fs/promises'
import {
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type CryptoKey as JoseKey,
  type JSONWebKeySet,
  type JWK,
  type JWSHeaderParameters,
} from 'jose'
import { checkDiscovery, checkSet } from './provider-documents.js'

export interface KeySetOptions {
  /** The issuer exactly as configured: discovery is read from it, and its answer must name it. */
  issuer: string
  /** A JWK Set file read instead of fetching (OIDC_JWKS_FILE); empty: discovery and the jwks_uri. */
  file: string
  /** How long one fetch may take. */
  timeoutMs?: number
  /** The least time between two fetches asked for by tokens (an unknown `kid`, no keys yet). */
  cooldownMs?: number
  /** Keys older than this are fetched again in the background; the old ones serve meanwhile. */
  maxAgeMs?: number
}

export interface KeySetStatus {
  /** How many keys are held (0: provider tokens cannot be verified, only service tokens work). */
  keys: number
  loadedAt: number | null
  failing: { since: number; message: string } | null
}

/** Thrown when there is no key at all: the provider was never reached and there is no file. */
export class NoKeysError extends Error {
  override name = 'NoKeysError'
}

type LocalSet = ReturnType<typeof createLocalJWKSet>

/** Which key material verified a token: the key set's generation and the keys of the token's kid then. */
export interface KeyStamp {
  generation: number
  /** The public keys of that kid (of the whole set, for a token without one), as text. */
  keys: string
}

/** One loaded key set: replaced whole by a refresh, so a key and its stamp always come from the same. */
interface Held {
  local: LocalSet
  generation: number
  byKid: Map<string, string>
  all: string
}

/**
 * The provider's public keys, fetched once at the start and kept. A token naming a `kid` not held
 * makes them fetched again (a key rotation), at most once per cool-down, so a stream of forged
 * `kid`s cannot make the service hammer the provider; keys older than the maximum age are fetched
 * again on the next provider token, in the background. A failed fetch never drops the keys held:
 * while the provider is unreachable, tokens signed with known keys keep working. Each load is a new
 * generation: what was verified with a key the provider no longer publishes is verified again.
 */
export class ProviderKeys {
  #held: Held | null = null
  #count = 0
  #loadedAt: number | null = null
  #attemptAt = 0
  #failing: { since: number; message: string } | null = null
  #jwksUri: string | null = null
  #discovery: { at: number; ok: boolean; document: Promise<Record<string, unknown>> } | null = null
  #pending: Promise<void> | null = null
  readonly #timeoutMs: number
  readonly #cooldownMs: number
  readonly #maxAgeMs: number

  constructor(readonly options: KeySetOptions) {
    this.#timeoutMs = options.timeoutMs ?? 5000
    this.#cooldownMs = options.cooldownMs ?? 30_000
    this.#maxAgeMs = options.maxAgeMs ?? 3_600_000
  }

  status(): KeySetStatus {
    return { keys: this.#count, loadedAt: this.#loadedAt, failing: this.#failing }
  }

  /** The generation of the keys held (0: none yet); it changes with every load. */
  get generation(): number {
    return this.#held?.generation ?? 0
  }

  /** The stamp a token with this kid would get from the keys held now, or null: no such key. */
  stampOf(kid: string | undefined): KeyStamp | null {
    const held = this.#held
    if (held === null) return null
    const keys = kid === undefined ? held.all : held.byKid.get(kid)
    return keys === undefined ? null : { generation: held.generation, keys }
  }

  /** Fetches (or reads) the keys now, coalescing callers; never throws: a failure is in status(). */
  refresh(): Promise<void> {
    if (this.#pending) return this.#pending
    this.#attemptAt = Date.now()
    this.#pending = this.#load()
      .then((set) => {
        this.#held = { local: createLocalJWKSet(set), generation: this.generation + 1, ...stampsOf(set) }
        this.#count = set.keys.length
        this.#loadedAt = Date.now()
        this.#failing = null
      })
      .catch((error: Error) => {
        this.#failing = { since: this.#failing?.since ?? Date.now(), message: error.message }
      })
      .finally(() => {
        this.#pending = null
      })
    return this.#pending
  }

  /** Keys past their maximum age are fetched again, in the background (the old ones serve meanwhile). */
  freshen(now = Date.now()): void {
    if (this.#loadedAt !== null && now - this.#loadedAt > this.#maxAgeMs && !this.#coolingDown(now)) void this.refresh()
  }

  #coolingDown(now: number): boolean {
    return now - this.#attemptAt < this.#cooldownMs
  }

  /** The key for a token's header and the stamp of the key material it came from. */
  async keyFor(header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<{ key: JoseKey; stamp: KeyStamp }> {
    if (this.#held === null && !this.#coolingDown(Date.now())) await this.refresh()
    else this.freshen()
    const held = this.#held
    if (held === null) throw new NoKeysError("none of the identity provider's keys could be loaded")
    try {
      return await keyFrom(held, header, token)
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || this.#coolingDown(Date.now())) throw error
      await this.refresh()
      return keyFrom(this.#held ?? held, header, token)
    }
  }

  /** The key for a token's header, in the shape jose's jwtVerify takes. */
  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<JoseKey> =>
    (await this.keyFor(header, token)).key

  async #load(): Promise<JSONWebKeySet> {
    if (this.options.file !== '')
      return checkSet(JSON.parse(await readFile(this.options.file, 'utf8')), this.options.file)
    if (this.#jwksUri === null) this.#jwksUri = (await this.discovery(true)).jwks_uri as string
    return checkSet(await this.#fetchJson(this.#jwksUri), this.#jwksUri)
  }

  /**
   * The provider's discovery document, checked (provider-documents.ts), read once and kept (the
   * SMART configuration repeats its endpoints). A failure is kept for the cool-down, so anonymous
   * requests cannot make the service knock at the provider; `retry` (a key fetch, which has its
   * own cool-down) tries again at once.
   */
  discovery(retry = false): Promise<Record<string, unknown>> {
    const now = Date.now()
    const known = this.#discovery
    if (known !== null && (known.ok || (!retry && now - known.at < this.#cooldownMs))) return known.document
    const url = `${this.options.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
    const entry = {
      at: now,
      ok: false,
      document: this.#fetchJson(url).then((document) => {
        checkDiscovery(document, url, this.options.issuer)
        entry.ok = true
        return document as Record<string, unknown>
      }),
    }
    // Nobody may be waiting for it (a key fetch that gave up): kept, not an unhandled rejection.
    entry.document.catch(() => {})
    this.#discovery = entry
    return entry.document
  }

  async #fetchJson(url: string): Promise<unknown> {
    let response: Response
    try {
      response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs),
      })
    } catch (error) {
      // fetch says only "fetch failed"; the cause says why (ECONNREFUSED, a timeout ...).
      const cause = (error as { cause?: { code?: string; message?: string } }).cause
      throw new Error(`${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`)
    }
    if (!response.ok) throw new Error(`${url} answered ${response.status}`)
    return response.json()
  }
}

async function keyFrom(held: Held, header: JWSHeaderParameters, token: FlattenedJWSInput) {
  const key = await held.local(header, token)
  const keys = header.kid === undefined ? held.all : (held.byKid.get(header.kid) ?? '')
  return { key, stamp: { generation: held.generation, keys } }
}

/** The public parts of each key as text, by kid and all together: what a stamp compares. */
function stampsOf(set: JSONWebKeySet): { byKid: Map<string, string>; all: string } {
  const text = (key: JWK) => JSON.stringify([key.kty, key.alg, key.crv, key.n, key.e, key.x, key.y])
  const byKid = new Map<string, string[]>()
  for (const key of set.keys) {
    if (key.kid === undefined) continue
    byKid.set(key.kid, [...(byKid.get(key.kid) ?? []), text(key)])
  }
  const joined = (texts: string[]) => texts.sort().join('\n')
  return {
    byKid: new Map([...byKid].map(([kid, texts]) => [kid, joined(texts)])),
    all: joined(set.keys.map(text)),
  }
}
