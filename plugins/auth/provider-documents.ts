import type { JSONWebKeySet } from 'jose'
import { secureProviderUrl } from '../../lib/sign-in-settings.js'

// What the provider publishes, checked before anything of it is believed: its discovery document
// and its key set.

/**
 * The key set's address from a discovery document, once the document is found to be the issuer's
 * (OpenID Connect Discovery §4.3: its `issuer` exactly the one configured) and every URL it names
 * (the key set, the endpoints the board signs in with) is https, or plain http on this machine:
 * keys fetched over plain http from elsewhere could be anyone's.
 */
export function checkDiscovery(document: unknown, url: string, issuer: string): string {
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

export function checkSet(value: unknown, where: string): JSONWebKeySet {
  const keys = (value as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys) || keys.length === 0) throw new Error(`${where} holds no JWK Set with keys`)
  // Private parts are never needed; a set that has them was copied from the wrong place.
  if (keys.some((k) => typeof k !== 'object' || k === null || 'd' in k || k.kty === 'oct'))
    throw new Error(`${where} holds a private or symmetric key: give only the provider's public keys`)
  return { keys } as JSONWebKeySet
}
