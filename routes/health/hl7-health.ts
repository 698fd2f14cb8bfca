import { type Static, Type } from '@sinclair/typebox'
import type { Hl7Feed } from '../../hl7/index.js'

export const Hl7Health = Type.Object(
  {
    listening: Type.Boolean({ description: 'the ADT listener runs (HL7_PORT set)' }),
    parked: Type.Integer({
      description: 'ADT messages parked, waiting for an admin (GET /hl7/messages?status=parked)',
    }),
    connections: Type.Optional(
      Type.Object(
        {
          open: Type.Integer({
            description: 'MLLP connections open now (places taken), those in a TLS handshake included',
          }),
          handshaking: Type.Integer({ description: 'of them, TLS connections that have not finished their handshake' }),
          heldBytes: Type.Integer({
            description: 'bytes the connections hold: messages received and not yet answered, answers not yet taken',
          }),
          max: Type.Integer({ description: 'HL7_MAX_CONNECTIONS' }),
          refused: Type.Object({
            full: Type.Integer({
              description:
                'connections closed unread because HL7_MAX_CONNECTIONS (or the places left beside HL7_RESERVED_ADDRESSES) were open',
            }),
            address: Type.Integer({ description: 'connections refused: not in HL7_ALLOWED_ADDRESSES' }),
            handshake: Type.Integer({
              description:
                'TLS connections closed: the handshake failed or did not finish within HL7_HANDSHAKE_TIMEOUT_MS',
            }),
            sender: Type.Integer({
              description:
                'messages answered AR, not logged: their MSH-3^MSH-4 not in HL7_ALLOWED_SENDERS (or not from its address)',
            }),
          }),
        },
        { description: "the listener's connections since the start (details only)" },
      ),
    ),
  },
  {
    description:
      'the ADT feed (only with HL7_PORT set or messages parked); parked messages do not make the service unhealthy',
  },
)

/** The ADT feed on /health: shown with the listener on, or while messages wait (parked before HL7_PORT was unset). */
export function hl7Health(feed: Hl7Feed): { hl7?: Static<typeof Hl7Health> } {
  const listening = feed.port !== null
  const parked = feed.messages.parkedCount()
  const connections = feed.connections()
  if (!listening && parked === 0) return {}
  return { hl7: { listening, parked, ...(connections === null ? {} : { connections }) } }
}

/** What anyone may see of it: the connections are the operator's. */
export function hl7Status(health: Static<typeof Hl7Health>): Static<typeof Hl7Health> {
  return { listening: health.listening, parked: health.parked }
}
