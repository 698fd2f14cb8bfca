import { readFile } from 'node:fs/promises'
import {
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type CryptoKey as JoseKey,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose'
import { secureProviderUrl } from '../../lib/sign-in-settings.js'

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

/**
 * The provider's public keys, fetched once at the start and kept. A token naming a `kid` not held
 * makes them fetched again (a key rotation), at most once per cool-down, so a stream of forged
 * `kid`s cannot make the service hammer the provider. A failed fetch never drops the keys held:
 * while the provider is unreachable, tokens signed with known keys keep working.
 */
export class ProviderKeys {
  #local: LocalSet | null = null
  #count = 0
  #loadedAt: number | null = null
  #attemptAt = 0
  #failing: { since: number; message: string } | null = null
  #jwksUri: string | null = null
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

  /** Fetches (or reads) the keys now, coalescing callers; never throws: a failure is in status(). */
  refresh(): Promise<void> {
    if (this.#pending) return this.#pending
    this.#attemptAt = Date.now()
    this.#pending = this.#load()
      .then((set) => {
        this.#local = createLocalJWKSet(set)
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

  /** The key for a token's header, in the shape jose's jwtVerify takes. */
  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<JoseKey> => {
    const now = Date.now()
    const coolingDown = now - this.#attemptAt < this.#cooldownMs
    if (this.#local === null && !coolingDown) await this.refresh()
    else if (this.#loadedAt !== null && now - this.#loadedAt > this.#maxAgeMs && !coolingDown) void this.refresh()
    const local = this.#local
    if (local === null) throw new NoKeysError("none of the identity provider's keys could be loaded")
    try {
      return await local(header, token)
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || Date.now() - this.#attemptAt < this.#cooldownMs) throw error
      await this.refresh()
      return (this.#local ?? local)(header, token)
    }
  }

  async #load(): Promise<JSONWebKeySet> {
    if (this.options.file !== '')
      return checkSet(JSON.parse(await readFile(this.options.file, 'utf8')), this.options.file)
    if (this.#jwksUri === null) {
      const url = `${this.options.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
      this.#jwksUri = checkDiscovery(await this.#fetchJson(url), url, this.options.issuer)
    }
    return checkSet(await this.#fetchJson(this.#jwksUri), this.#jwksUri)
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

/**
 * The key set's address from a discovery document, once the document is found to be the issuer's
 * (OpenID Connect Discovery §4.3: its `issuer` exactly the one configured) and every URL it names
 * (the key set, the endpoints the board signs in with) is https, or plain http on this machine:
 * keys fetched over plain http from elsewhere could be anyone's.
 */
function checkDiscovery(document: unknown, url: string, issuer: string): string {
  if (typeof document !== 'object' || document === null) throw new Error(`${url} is not a discovery document`)
  const discovery = document as Record<string, unknown>
  if (discovery.issuer !== issuer)
    throw new Error(`${url} names issuer ${JSON.stringify(discovery.issuer)}, not ${issuer}`)
  for (const [name, value] of Object.entries(discovery)) {
    if (name !== 'jwks_uri' && !name.endsWith('_endpoint')) continue
    if (typeof value !== 'string' || !URL.canParse(value) || !secureProviderUrl(new URL(value)))
      throw new Error(
        `${url} names ${name} ${JSON.stringify(value)}: not https (plain http only on this machine), so none of its keys are trusted`,
      )
  }
  if (typeof discovery.jwks_uri !== 'string') throw new Error(`${url} has no jwks_uri`)
  return discovery.jwks_uri
}

function checkSet(value: unknown, where: string): JSONWebKeySet {
  const keys = (value as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys) || keys.length === 0) throw new Error(`${where} holds no JWK Set with keys`)
  // Private parts are never needed; a set that has them was copied from the wrong place.
  if (keys.some((k) => typeof k !== 'object' || k === null || 'd' in k || k.kty === 'oct'))
    throw new Error(`${where} holds a private or symmetric key: give only the provider's public keys`)
  return { keys } as JSONWebKeySet
}
