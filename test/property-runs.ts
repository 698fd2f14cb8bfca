/**
 * How deep the property-based tests (fast-check) go: FUZZ_RUNS, the runs of each fuzz property
 * (test/fuzz), 200 unless set. Every other property states its runs at that default and makes
 * its share of FUZZ_RUNS: twice the runs at FUZZ_RUNS=400. `npm test` runs the default;
 * `npm run test:deep` (CI) runs every property at FUZZ_RUNS=1000. Below the default, the floors
 * that show a fuzzer reached its paths ("some patches succeeded") may fail by chance. A failure
 * prints its `seed:`, which FUZZ_SEED replays.
 */
export const DEFAULT_FUZZ_RUNS = 200

function fuzzRuns(text: string | undefined): number {
  if (text === undefined || text === '') return DEFAULT_FUZZ_RUNS
  const runs = Number(text)
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`FUZZ_RUNS="${text}": a whole number of runs, at least 1`)
  return runs
}

export const FUZZ_RUNS = fuzzRuns(process.env.FUZZ_RUNS)

/** The runs of a property that makes `atDefault` runs at FUZZ_RUNS=200: its share of FUZZ_RUNS, at least one. */
export function propertyRuns(atDefault: number): number {
  return Math.max(1, Math.round((atDefault * FUZZ_RUNS) / DEFAULT_FUZZ_RUNS))
}
