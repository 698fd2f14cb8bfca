import t from 'tap'
import { createLru } from '../../lib/lru.js'

t.test('bounded by entries: the least recently used goes first', async (t) => {
  const lru = createLru<string>(2, Number.POSITIVE_INFINITY, () => 1)
  lru.set('a', 'A')
  lru.set('b', 'B')
  t.equal(lru.get('a'), 'A', 'a is now the most recently used')
  lru.set('c', 'C')
  t.equal(lru.get('b'), undefined, 'b was the least recently used')
  t.same([lru.get('a'), lru.get('c'), lru.size], ['A', 'C', 2])
})

t.test('bounded by weight: entries go until the rest fits', async (t) => {
  const lru = createLru<string>(100, 10, (value) => value.length)
  lru.set('a', 'xxxx')
  lru.set('b', 'yyyy')
  lru.set('c', 'zzzz')
  t.equal(lru.get('a'), undefined)
  t.equal(lru.weight, 8)
  lru.set('b', 'y')
  t.equal(lru.weight, 5, 'replacing a value replaces its weight')
  lru.clear()
  t.same([lru.size, lru.weight, lru.get('c')], [0, 0, undefined])
})
