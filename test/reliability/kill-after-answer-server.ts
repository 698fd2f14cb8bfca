import { startServer } from '../../start-server.js'

/**
 * The server for test/reliability/read-audit-crash.test.ts: it dies the moment its
 * KILL_AFTER_ANSWERS-th answer of a 200 has been handed to the operating system (the client still
 * receives it), the way a power cut right after an answer would. A test-only entry, so no switch
 * for it reaches the production server.
 */
const killAfter = Number(process.env.KILL_AFTER_ANSWERS)
let answered = 0
await startServer(process.env, {
  beforeListen(app) {
    app.server.on('request', function countAnswers(_request, response) {
      response.once('finish', () => {
        if (response.statusCode === 200 && ++answered >= killAfter) process.kill(process.pid, 'SIGKILL')
      })
    })
  },
})
