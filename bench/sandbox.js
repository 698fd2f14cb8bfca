// The print sandbox on its own (issue 16): how long one typical print layout takes to render, with
// the compiled layout cached, one at a time and with one render per CPU at once. Needs dist/
// (`npm run build`); `npm run bench:sandbox [-- --renders N]`. See docs/PERFORMANCE.md.
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { createRenderer } from '../dist/render/sandbox.js'

const { values: args } = parseArgs({ options: { renders: { type: 'string', default: '400' } } })
const RENDERS = Number(args.renders)
const LIMITS = { timeoutMs: 1000, memoryMb: 32, maxOutputBytes: 2_097_152 }

/** An admission assessment as a ward prints it: 20 questions, their choices and one patient's answers. */
const items = Array.from({ length: 20 }, (_, k) => ({
  id: `q${k + 1}`,
  question: `Question ${k + 1} of the admission check?`,
  choices: k % 2 === 0 ? ['none', 'mild', 'moderate', 'severe'] : undefined,
  required: k % 3 === 0,
}))
const record = {
  id: '65f0c0ffee0000000000abcd',
  name: 'Admission assessment',
  type: 'assessment',
  items,
  tags: ['vitals'],
  meta: { version: 3 },
  config: {},
  data: {
    patient: { name: 'Ada Example', born: '1950-02-03', bed: 'B-12', ward: 'Ward 3 East' },
    answers: Object.fromEntries(items.map((item, k) => [item.id, item.choices ? item.choices[k % 4] : `answer ${k}`])),
    printedBy: 'Nurse Joy',
  },
}

const LAYOUTS = {
  pug: `
doctype html
html
  head
    title= name
    style.
      table { border-collapse: collapse } td, th { border: 1px solid #999; padding: 2px 6px }
  body
    h1= name
    p.patient
      strong= data.patient.name
      |  (born #{data.patient.born}), bed #{data.patient.bed}, #{data.patient.ward}
    table
      tr
        th #
        th Question
        th Answer
      each item, i in items
        tr(class=item.required ? 'required' : null)
          td= i + 1
          td= item.question
          td
            if item.choices
              each choice in item.choices
                span(class=choice === data.answers[item.id] ? 'chosen' : 'other')= choice
            else
              = data.answers[item.id] || '—'
    p.footer Printed by #{data.printedBy}, version #{meta.version}
`,
  ejs: `<!DOCTYPE html>
<html><head><title><%= name %></title></head><body>
<h1><%= name %></h1>
<p class="patient"><strong><%= data.patient.name %></strong> (born <%= data.patient.born %>), bed <%= data.patient.bed %>, <%= data.patient.ward %></p>
<table><tr><th>#</th><th>Question</th><th>Answer</th></tr>
<% items.forEach(function (item, i) { %><tr class="<%= item.required ? 'required' : '' %>"><td><%= i + 1 %></td><td><%= item.question %></td><td>
<% if (item.choices) { item.choices.forEach(function (choice) { %><span class="<%= choice === data.answers[item.id] ? 'chosen' : 'other' %>"><%= choice %></span><% }) } else { %><%= data.answers[item.id] || '—' %><% } %>
</td></tr><% }) %>
</table>
<p class="footer">Printed by <%= data.printedBy %>, version <%= meta.version %></p>
</body></html>`,
}

async function measure(engine) {
  const renderer = createRenderer(LIMITS)
  const job = { engine, source: LAYOUTS[engine], cacheKey: `bench:1:${engine}`, data: record }
  try {
    let started = performance.now()
    const html = await renderer.render(job)
    const first = performance.now() - started
    for (let i = 0; i < 20; i++) await renderer.render(job)
    started = performance.now()
    for (let i = 0; i < RENDERS; i++) await renderer.render(job)
    const sequential = (performance.now() - started) / RENDERS
    const parallel = availableParallelism()
    started = performance.now()
    await Promise.all(
      Array.from({ length: parallel }, async () => {
        for (let i = 0; i < RENDERS / parallel; i++) await renderer.render(job)
      }),
    )
    const perSecond = RENDERS / ((performance.now() - started) / 1000)
    return { engine, bytes: Buffer.byteLength(html), first, sequential, perSecond, parallel }
  } finally {
    renderer.close()
  }
}

const rows = []
for (const engine of ['pug', 'ejs']) rows.push(await measure(engine))
console.log(`node ${process.version}, ${availableParallelism()} CPUs, ${RENDERS} renders per row`)
console.log('| layout | HTML bytes | first render (start + compile) | one at a time | renders/s, one per CPU at once |')
console.log('| --- | --- | --- | --- | --- |')
for (const row of rows) {
  console.log(
    `| ${row.engine} admission form, 20 questions | ${row.bytes} | ${row.first.toFixed(0)} ms | ` +
      `${row.sequential.toFixed(2)} ms | ${row.perSecond.toFixed(0)} (${row.parallel} at once) |`,
  )
}
