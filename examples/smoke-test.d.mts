// Types of smoke-test.mjs, for TypeScript scripts that import it (and the command-line tool's `smoke`).
import type { FacilityService } from 'facility-service'

export class SmokeFailure extends Error {}

/** The steps, on a service from `build()`; `print` gets one line per step. */
export function smokeTest(service: FacilityService, print?: (line: string) => void): Promise<void>
