// The typical print the sandbox benches render (bench/sandbox.js, bench/sandbox-memory.js): one
// admission assessment and its layout in each engine, so both measure the same print.
/** An admission assessment as a ward prints it: 20 questions, their choices and one patient's answers. */
const items = Array.from({ length: 20 }, (_, k) => ({
  id: `q${k + 1}`,
  question: `Question ${k + 1} of the admission check?`,
  choices: k % 2 === 0 ? ['none', 'mild', 'moderate', 'severe'] : undefined,
  required: k % 3 === 0,
}))
export const record = {
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

export const LAYOUTS = {
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
