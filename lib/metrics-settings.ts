import { type Static, Type } from '@sinclair/typebox'
import { isLoopbackHost } from './hl7-network.js'

/**
 * The settings of the operators' metrics (docs/METRICS.md), part of the one environment schema
 * (config.ts spreads them in): a listener of its own, apart from the API, off while METRICS_PORT
 * is unset.
 */
export const METRICS_SETTINGS = {
  METRICS_PORT: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 65535,
      description: 'port of the metrics listener (GET /metrics, Prometheus text format); unset: no metrics at all',
    }),
  ),
  METRICS_HOST: Type.String({
    minLength: 1,
    default: '127.0.0.1',
    description: 'address the metrics listener binds to',
  }),
  METRICS_TOKEN: Type.String({
    default: '',
    description:
      'a bearer token the scraper must send (Authorization: Bearer ...), at least 32 characters; required when METRICS_HOST is not loopback',
  }),
}

const MetricsSchema = Type.Object(METRICS_SETTINGS)
export type MetricsSettings = Static<typeof MetricsSchema>

export const METRICS_TOKEN_MIN_LENGTH = 32

/** A listener off loopback answers only a scraper with the token: the counts tell a ward's activity. */
export function metricsProblems(config: MetricsSettings): [string, string][] {
  const problems: [string, string][] = []
  if (config.METRICS_TOKEN !== '' && config.METRICS_TOKEN.length < METRICS_TOKEN_MIN_LENGTH)
    problems.push(['METRICS_TOKEN', `must be at least ${METRICS_TOKEN_MIN_LENGTH} characters`])
  else if (config.METRICS_PORT !== undefined && !isLoopbackHost(config.METRICS_HOST) && config.METRICS_TOKEN === '')
    problems.push([
      'METRICS_HOST',
      'is not loopback: set METRICS_TOKEN (the scraper sends it as a bearer token); what a ward does is not open to the hospital network',
    ])
  return problems
}
