// oidc-provider ships no types (and @types/oidc-provider lags its major versions): the little
// the tests use of it, declared by hand.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>)
    callback(): (req: IncomingMessage, res: ServerResponse) => void
    on(event: string, listener: (...args: unknown[]) => void): this
    static errors: { InvalidTarget: new () => Error }
  }
  export default Provider
}
