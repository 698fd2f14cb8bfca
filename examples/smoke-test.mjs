#!/usr/bin/env node
// A smoke test for after an upgrade: admit a patient, list the active beds, discharge, render a
// form template, check the audit trail. Everything goes through `inject`: the whole service runs
// in this process, on the database you name, and nothing listens on the network.
//
//   node examples/smoke-test.mjs [DATABASE]      (default: a new database in memory)
//
// Run it on a COPY of a production database (it writes records, in facility "smoke-test"):
// `npx facility-service smoke --database FILE` makes the copy, runs these same steps, and throws
// the copy away. One line per step; the first failure stops it with exit code 1.
import { pathToFileURL } from 'node:url'

export class SmokeFailure extends Error {}

/** The steps, on a service from `build()`; `print` gets one line per step. */
export async function smokeTest(service, print = console.log) {
  const admin = service.createToken({ account: 'smoke-test', role: 'admin', label: 'smoke test' })
  const headers = { authorization: `Bearer ${admin.token}` }
  async function call(step, method, url, payload) {
    const res = await service.inject({ method, url, headers, ...(payload ? { payload } : {}) })
    if (res.statusCode !== 200)
      throw new SmokeFailure(`${step}: ${method} ${url} answered ${res.statusCode} ${res.body}`)
    return res
  }
  function check(step, ok, detail) {
    if (!ok) throw new SmokeFailure(`${step}: ${detail}`)
    print(`ok   ${step}: ${detail}`)
  }
  try {
    const bed = `smoke-${Date.now()}`
    const admitted = (
      await call('admit', 'POST', '/ward-occupants', {
        encounter: 'smoke-encounter',
        bed,
        occupiedBy: 'smoke-patient',
        facility: 'smoke-test',
      })
    ).json()
    check('admit', admitted.bed === bed && admitted.dischargedAt === undefined, `occupant ${admitted.id} in bed ${bed}`)

    const active = (
      await call('active beds', 'GET', `/ward-occupants?facility=smoke-test&dischargedAt=null&bed=${bed}`)
    ).json()
    check(
      'active beds',
      active.total === 1 && active.wardOccupants[0]?.id === admitted.id,
      `${active.total} active in ${bed}`,
    )

    const discharged = (await call('discharge', 'PATCH', `/ward-occupants/${admitted.id}`, { discharge: true })).json()
    check(
      'discharge',
      typeof discharged.dischargedAt === 'number',
      `discharged at ${new Date(discharged.dischargedAt).toISOString()}`,
    )

    const form = (
      await call('form template', 'POST', '/form-templates', {
        type: 'smoke-test',
        name: 'Smoke test form',
        facility: 'smoke-test',
        template: 'h1= name\np Bed #{data.bed}',
      })
    ).json()
    const html = (await call('render', 'POST', `/form-templates/${form.id}/render`, { data: { bed } })).body
    check(
      'render',
      html.includes('<h1>Smoke test form</h1>') && html.includes(`Bed ${bed}`),
      `${html.length} bytes of HTML`,
    )

    const audit = (await call('audit', 'GET', `/audit?resource=ward-occupants&recordId=${admitted.id}`)).json()
    const operations = audit.entries.map((entry) => entry.operation).join(',')
    check('audit', operations === 'create,patch', `entries ${operations} by ${audit.entries[0]?.account}`)
  } finally {
    admin.revoke()
  }
}

// Run as a script (not when imported by `facility-service smoke`).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { build } = await import('facility-service')
  const service = await build({ database: process.argv[2] ?? ':memory:' })
  try {
    await smokeTest(service)
    console.log('smoke test passed')
  } catch (error) {
    console.log(`FAIL ${error instanceof SmokeFailure ? error.message : error}`)
    process.exitCode = 1
  } finally {
    await service.close()
  }
}
