import { type Static, Type } from '@sinclair/typebox'
import { coversEveryAddress } from './address-coverage.js'
import { HL7_HEADER_SETTINGS, hl7HeaderProblems } from './hl7-header-settings.js'
import { isKnownTimeZone, isLoopbackHost, parseAddressList, parseSenders } from './hl7-network.js'

/**
 * The settings of the ADT feed (HL7 v2 over MLLP; hl7/ and docs/ADT.md), part of the one environment
 * schema (config.ts spreads them in); no listener while HL7_PORT is unset.
 */
export const HL7_SETTINGS = {
  HL7_PORT: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 65535, description: 'port of the ADT listener (MLLP); unset: no listener' }),
  ),
  HL7_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'address the ADT listener binds to' }),
  HL7_TLS_CERT: Type.String({ default: '', description: 'PEM certificate file: the listener speaks MLLP over TLS' }),
  HL7_TLS_KEY: Type.String({ default: '', description: 'PEM private key file of HL7_TLS_CERT' }),
  HL7_TLS_CA: Type.String({
    default: '',
    description: 'PEM CA file: mutual TLS, only clients with a certificate it signed may connect',
  }),
  HL7_ALLOWED_ADDRESSES: Type.String({
    default: '',
    description:
      'client addresses and CIDR ranges that may connect, comma-separated; required (or mutual TLS) when HL7_HOST is not loopback',
  }),
  HL7_ALLOWED_SENDERS: Type.String({
    default: '',
    description:
      'senders that may send, as MSH-3^MSH-4, comma-separated (HIS^GENERAL), each optionally bound to a client address or range (LAB^GENERAL@10.1.2.7); empty: any; others get AR. A filter on what an admitted client claims, not authentication',
  }),
  HL7_DEFAULT_FACILITY: Type.String({ default: '', description: 'facility when PV1-3.4 is empty' }),
  HL7_PATIENT_ID_TYPE: Type.String({
    minLength: 1,
    default: 'MR',
    description: 'the PID-3 identifier type (CX-5) that names the patient; else the first repetition',
  }),
  HL7_TIMEZONE: Type.String({
    default: '',
    description: "IANA zone of HL7 timestamps without an offset (Europe/Berlin); empty: the server's zone",
  }),
  HL7_A08_TRANSFERS: Type.Boolean({ default: true, description: 'a location change in an A08 is a transfer' }),
  HL7_MAX_MESSAGE_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 67_108_864,
    default: 1_048_576,
    description: 'largest MLLP frame; a larger one gets AR and the connection is closed',
  }),
  HL7_FRAME_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 3_600_000,
    default: 30_000,
    description: 'a started frame not finished within this time, or bytes outside any frame, close the connection',
  }),
  // A ward's interface engine opens 1 to 4 connections (one per channel); 8 leaves room for each
  // to reconnect while its old connection is not yet found dead (TCP keepalive, ~12 minutes), and
  // bounds what the feed may hold to 8 frames of HL7_MAX_MESSAGE_BYTES (docs/ADT.md, "Limits").
  HL7_MAX_CONNECTIONS: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 8,
    description: 'MLLP connections open at once; one more is closed before anything is read (logged, counted)',
  }),
  HL7_RESERVED_ADDRESSES: Type.String({
    default: '',
    description:
      "the interface engine's addresses and CIDR ranges, comma-separated: HL7_RESERVED_CONNECTIONS places are kept for them, other clients share the rest; empty: none kept",
  }),
  HL7_RESERVED_CONNECTIONS: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 4,
    description: 'places of HL7_MAX_CONNECTIONS kept for HL7_RESERVED_ADDRESSES (only with them set)',
  }),
  HL7_HANDSHAKE_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 120_000,
    default: 10_000,
    description: 'a TLS client that has not finished its handshake within this time is closed',
  }),
  // An engine keeps one connection for hours and sends in bursts: half an hour without a message
  // is a quiet night, not a dead peer. Closing it is harmless (the engine reconnects), so the
  // limit only frees the places of connections that went quiet for good.
  HL7_IDLE_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 86_400_000,
    default: 1_800_000,
    description: 'a connection that sends nothing and takes no answer for this long is closed',
  }),
  HL7_MAX_SEGMENTS: Type.Integer({
    minimum: 10,
    maximum: 100_000,
    default: 1000,
    description: 'segments of one message; more get AR before the message is parsed',
  }),
  HL7_MAX_FIELDS: Type.Integer({
    minimum: 100,
    maximum: 1_000_000,
    default: 10_000,
    description: 'fields, field repetitions and components of one message; more get AR before it is parsed',
  }),
  HL7_KEEP_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    default: 30,
    description: 'how long the raw text of ADT messages (patient data) is kept in the message log',
  }),
  ...HL7_HEADER_SETTINGS,
}

const Hl7Schema = Type.Object(HL7_SETTINGS)
export type Hl7Settings = Static<typeof Hl7Schema>

/** The ADT settings that only make sense together, and the rule that keeps admissions off the network. */
export function hl7Problems(config: Hl7Settings): [string, string][] {
  const problems: [string, string][] = hl7HeaderProblems(config)
  const addresses = parseAddressList(config.HL7_ALLOWED_ADDRESSES)
  if ('problem' in addresses) problems.push(['HL7_ALLOWED_ADDRESSES', addresses.problem])
  const reserved = parseAddressList(config.HL7_RESERVED_ADDRESSES)
  if ('problem' in reserved) problems.push(['HL7_RESERVED_ADDRESSES', reserved.problem])
  else if (reserved.count > 0 && config.HL7_RESERVED_CONNECTIONS > config.HL7_MAX_CONNECTIONS)
    problems.push([
      'HL7_RESERVED_CONNECTIONS',
      `keeps more places than HL7_MAX_CONNECTIONS (${config.HL7_MAX_CONNECTIONS}) has`,
    ])
  const senders = parseSenders(config.HL7_ALLOWED_SENDERS)
  if ('problem' in senders) problems.push(['HL7_ALLOWED_SENDERS', senders.problem])
  if ((config.HL7_TLS_CERT === '') !== (config.HL7_TLS_KEY === ''))
    problems.push([
      config.HL7_TLS_CERT === '' ? 'HL7_TLS_CERT' : 'HL7_TLS_KEY',
      'HL7_TLS_CERT and HL7_TLS_KEY go together',
    ])
  if (config.HL7_TLS_CA !== '' && config.HL7_TLS_CERT === '')
    problems.push(['HL7_TLS_CA', 'mutual TLS needs the server certificate too (HL7_TLS_CERT, HL7_TLS_KEY)'])
  if (config.HL7_TIMEZONE !== '' && !isKnownTimeZone(config.HL7_TIMEZONE))
    problems.push(['HL7_TIMEZONE', 'is not an IANA time zone this runtime knows (Europe/Berlin, America/New_York)'])
  const open = 'count' in addresses && (addresses.count === 0 || coversEveryAddress(config.HL7_ALLOWED_ADDRESSES))
  if (config.HL7_PORT !== undefined && !isLoopbackHost(config.HL7_HOST) && open && config.HL7_TLS_CA === '')
    problems.push([
      'HL7_HOST',
      "is not loopback: set HL7_ALLOWED_ADDRESSES (the interface engine's address; a list that lets every address in, such as 0.0.0.0/0 or ::/0, is none) or mutual TLS (HL7_TLS_CA); a ward's admissions are not open to the hospital network",
    ])
  return problems
}
