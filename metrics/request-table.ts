import type { Registry } from 'prom-client'

/**
 * The requests' counts and durations by route, kept in plain numbers and typed arrays: a request
 * costs a few Map lookups and additions, no allocation (prom-client's own counters and histograms
 * hash their label objects into strings on every call). The registry reads them at each scrape
 * through two metrics of prom-client's shape (`get()`), written in its text format like its own.
 */
interface RouteRow {
  /** Observations per bucket (not cumulative), the last one for +Inf. */
  buckets: Float64Array
  sum: number
  count: number
  /** Requests by method, then by status code. */
  answers: Map<string, Map<number, number>>
}

interface Sample {
  value: number
  labels: Record<string, string | number>
  metricName?: string
}

export class RequestTable {
  private readonly routes = new Map<string, RouteRow>()

  constructor(private readonly bounds: readonly number[]) {}

  record(route: string, method: string, status: number, seconds: number): void {
    let row = this.routes.get(route)
    if (row === undefined) {
      row = { buckets: new Float64Array(this.bounds.length + 1), sum: 0, count: 0, answers: new Map() }
      this.routes.set(route, row)
    }
    let i = 0
    while (i < this.bounds.length && seconds > (this.bounds[i] as number)) i++
    row.buckets[i] = (row.buckets[i] as number) + 1
    row.sum += seconds
    row.count++
    let byStatus = row.answers.get(method)
    if (byStatus === undefined) {
      byStatus = new Map()
      row.answers.set(method, byStatus)
    }
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1)
  }

  private countSamples(): Sample[] {
    const samples: Sample[] = []
    for (const [route, row] of this.routes)
      for (const [method, byStatus] of row.answers)
        for (const [status, value] of byStatus)
          samples.push({ value, labels: { route, method, status_code: String(status) } })
    return samples
  }

  private durationSamples(name: string): Sample[] {
    const samples: Sample[] = []
    for (const [route, row] of this.routes) {
      let cumulative = 0
      this.bounds.forEach((le, i) => {
        cumulative += row.buckets[i] as number
        samples.push({ value: cumulative, labels: { le, route }, metricName: `${name}_bucket` })
      })
      samples.push({ value: row.count, labels: { le: '+Inf', route }, metricName: `${name}_bucket` })
      samples.push({ value: row.sum, labels: { route }, metricName: `${name}_sum` })
      samples.push({ value: row.count, labels: { route }, metricName: `${name}_count` })
    }
    return samples
  }

  /** Registers the two metrics that show this table. */
  register(registry: Registry, names: { requests: string; duration: string }): void {
    const shown = (name: string, help: string, type: 'counter' | 'histogram', values: () => Sample[]) => ({
      name,
      help,
      type,
      aggregator: 'sum',
      get: () => ({ name, help, type, aggregator: 'sum', values: values() }),
    })
    registry.registerMetric(
      shown(names.requests, 'HTTP requests answered, by route pattern, method and status code', 'counter', () =>
        this.countSamples(),
      ) as never,
    )
    registry.registerMetric(
      shown(names.duration, 'time from a request received to its answer sent, by route pattern', 'histogram', () =>
        this.durationSamples(names.duration),
      ) as never,
    )
  }
}
