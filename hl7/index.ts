import { readFileSync } from 'node:fs'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'
import { createAdtWard } from '../db/repositories/adt-ward.js'
import { createHl7MessageLog, type Hl7MessageLog, type Hl7MessageRow } from '../db/repositories/hl7-messages.js'
import { type AdtSettings, readAdt } from '../domain/adt-message.js'
import { Hl7NotParkedError, Hl7StillParkedError, NotFoundError } from '../domain/errors.js'
import { parseProcessingIds } from '../lib/hl7-header-settings.js'
import { parseAddressList, parseSenders } from '../lib/hl7-network.js'
import type { Answered } from './answer.js'
import { settingsAtReceipt } from './reading-settings.js'
import { RefusalLog } from './refusals.js'

declare module 'fastify' {
  interface FastifyInstance {
    hl7: Hl7Feed
  }
}

export interface Hl7Feed {
  messages: Hl7MessageLog
  /** The port the listener took (null: HL7_PORT unset, no listener). */
  port: number | null
  /** The listener's connections: open, the limit, refused since the start (null: no listener). */
  connections(): Hl7Connections | null
  /** Applies a parked message again (an admin's retry). */
  retry(id: string, by: string): Promise<Hl7MessageRow>
  /** Called on every answer the listener sends (the operators' metrics). */
  onAnswered(listener: (answered: Answered) => void): void
}

export interface Hl7Connections {
  open: number
  handshaking: number
  heldBytes: number
  max: number
  /** Connections closed unread (full, address, handshake), and messages of senders not allowed (sender). */
  refused: { full: number; address: number; handshake: number; sender: number }
}

const DAY_MS = 86_400_000

export function adtSettings(config: Config): AdtSettings {
  return {
    defaultFacility: config.HL7_DEFAULT_FACILITY === '' ? null : config.HL7_DEFAULT_FACILITY,
    patientIdType: config.HL7_PATIENT_ID_TYPE,
    timeZone: config.HL7_TIMEZONE === '' ? Intl.DateTimeFormat().resolvedOptions().timeZone : config.HL7_TIMEZONE,
    transferOnA08: config.HL7_A08_TRANSFERS,
    processingIds: parseProcessingIds(config.HL7_PROCESSING_IDS),
  }
}

function tlsFiles(config: Config) {
  if (config.HL7_TLS_CERT === '') return null
  return {
    cert: readFileSync(config.HL7_TLS_CERT),
    key: readFileSync(config.HL7_TLS_KEY),
    ca: config.HL7_TLS_CA === '' ? null : readFileSync(config.HL7_TLS_CA),
  }
}

// The HL7 parser (@medplum/core) and the listener's modules are loaded when first needed: with
// HL7_PORT set at start, otherwise at the first retry of a parked message. A service without an
// ADT feed does not hold them.
async function parseHl7(text: string) {
  const { Hl7Message } = await import('@medplum/core')
  return Hl7Message.parse(text)
}

async function listenerModules() {
  const [answer, refusal, listener] = await Promise.all([
    import('./answer.js'),
    import('./frame-refusal.js'),
    import('./listener.js'),
  ])
  return {
    createAnswerer: answer.createAnswerer,
    frameRefusal: refusal.frameRefusal,
    createListener: listener.createListener,
  }
}

/**
 * The ADT feed (docs/ADT.md): the message log and, with HL7_PORT set, the MLLP listener in the
 * server's process. Every message is answered through the write queue, so its change commits with
 * the API's in the same group commits, and through the ward-occupant repository, so the feed, the
 * board, the audit and the notifications see it as an API change. Closed before the database: the
 * messages in hand are answered first.
 */
export default fp<{ config: Config }>(
  async function hl7Plugin(fastify, { config }) {
    // Read when first needed too: asking Intl for the server's zone maps about 8 MB of time-zone
    // data.
    let settings: AdtSettings | null = null
    const readingSettings = () => {
      settings ??= adtSettings(config)
      return settings
    }
    const adtWard = createAdtWard(fastify.db, {
      wardOccupants: fastify.repos.wardOccupants,
      bedStates: fastify.repos.bedStates,
      exclusiveBeds: config.BED_POLICY === 'exclusive',
      transferOnA08: config.HL7_A08_TRANSFERS,
    })
    const messages = createHl7MessageLog(fastify.db, {
      writes: fastify.writes,
      adtWard,
      notify: (notification) => fastify.repos.notifications.create(notification),
    })

    async function retry(id: string, by: string): Promise<Hl7MessageRow> {
      const row = messages.get(id)
      if (!row) throw new NotFoundError('HL7 message', id)
      // Before its text is read again: a resolved message is not parked, whatever today's rules say of it.
      if (row.status !== 'parked') throw new Hl7NotParkedError(id, row.status)
      // Read as at receipt: today's settings could make it another facility's, patient's or time.
      const reading =
        row.raw === null ? null : readAdt(await parseHl7(row.raw), settingsAtReceipt(row.read_with, readingSettings()))
      // Refused by a rule of today's (HL7_PROCESSING_IDS: the ward stopped taking training messages):
      // the message stays parked as it was (its reason too), to dismiss or to retry once the rule takes it again.
      if (reading?.kind === 'rejected') throw new Hl7StillParkedError(reading.rejection.reason)
      if (reading?.kind !== 'ward') throw new NotFoundError('parked HL7 message text of', id)
      // An A50 since may have given the visit a new number: the log's column follows it, the text does not.
      const message = row.encounter ? { ...reading.message, encounter: row.encounter } : reading.message
      return messages.retry(id, message, reading.header, by)
    }

    await fastify.retention.add({
      name: 'HL7 message details',
      prune: (now) => messages.prune(now - config.HL7_KEEP_DAYS * DAY_MS),
    })

    const answeredListeners: ((answered: Answered) => void)[] = []
    const onAnswered = (listener: (answered: Answered) => void) => void answeredListeners.push(listener)
    const feed: Hl7Feed = { messages, port: null, connections: () => null, retry, onAnswered }
    fastify.decorate('hl7', feed)
    if (config.HL7_PORT !== undefined) {
      const { createAnswerer, createListener, frameRefusal } = await listenerModules()
      const addresses = parseAddressList(config.HL7_ALLOWED_ADDRESSES)
      // Both checked at start (lib/hl7-settings.ts): a problem cannot reach here.
      const senders = parseSenders(config.HL7_ALLOWED_SENDERS)
      const reserved = parseAddressList(config.HL7_RESERVED_ADDRESSES)
      const limits = {
        maxBytes: config.HL7_MAX_MESSAGE_BYTES,
        maxSegments: config.HL7_MAX_SEGMENTS,
        maxFields: config.HL7_MAX_FIELDS,
      }
      const senderRefusals = new RefusalLog(fastify.log)
      const listener = createListener({
        host: config.HL7_HOST,
        port: config.HL7_PORT,
        tls: tlsFiles(config),
        handshakeTimeoutMs: config.HL7_HANDSHAKE_TIMEOUT_MS,
        allowed: 'list' in addresses && addresses.count > 0 ? addresses.list : null,
        maxConnections: config.HL7_MAX_CONNECTIONS,
        reserved:
          'list' in reserved && reserved.count > 0
            ? { addresses: reserved.list, places: config.HL7_RESERVED_CONNECTIONS }
            : null,
        maxFrameBytes: config.HL7_MAX_MESSAGE_BYTES,
        frameTimeoutMs: config.HL7_FRAME_TIMEOUT_MS,
        idleTimeoutMs: config.HL7_IDLE_TIMEOUT_MS,
        // Received and unsent alike: a message in hand and its answer, each up to the largest frame.
        maxHeldBytes: config.HL7_MAX_MESSAGE_BYTES,
        maxSegments: config.HL7_MAX_SEGMENTS,
        maxFields: config.HL7_MAX_FIELDS,
        charset: config.HL7_CHARSET,
        log: fastify.log,
        answer: createAnswerer({
          log: messages,
          settings: readingSettings(),
          senders: 'rules' in senders ? senders.rules : new Map(),
          refusals: senderRefusals,
          logger: fastify.log,
          observe: (answered) => {
            // Counting must never turn an answer into AE.
            try {
              for (const listener of answeredListeners) listener(answered)
            } catch (error) {
              fastify.log.error({ err: error }, 'HL7: a listener of answers failed')
            }
          },
        }),
        refuse: (reason, head) => frameRefusal(reason, head, limits),
      })
      feed.connections = () => {
        const { refused, ...open } = listener.connections()
        return { ...open, refused: { ...refused, sender: senderRefusals.counts.sender } }
      }
      // Once the whole app is ready: no message is taken by a service that might still fail to start.
      fastify.addHook('onReady', async function listen() {
        feed.port = await listener.start()
        fastify.log.info(
          { host: config.HL7_HOST, port: feed.port, tls: config.HL7_TLS_CERT !== '' },
          'ADT feed listening (MLLP)',
        )
      })
      fastify.addHook('onClose', async function closeListener() {
        await listener.close()
      })
    }
  },
  { name: 'hl7', fastify: '5.x', dependencies: ['db', 'retention', 'notification-producer'] },
)
