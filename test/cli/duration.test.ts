import t from 'tap'
import { parseDuration } from '../../cli/duration.js'

t.test('durations', async (t) => {
  t.equal(parseDuration('90s'), 90_000)
  t.equal(parseDuration('12h'), 43_200_000)
  t.equal(parseDuration('30d'), 2_592_000_000)
  t.throws(() => parseDuration('1y'))
})
