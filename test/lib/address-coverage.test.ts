import t from 'tap'
import { ConfigError, loadConfig } from '../../config.js'
import { coversEveryAddress } from '../../lib/address-coverage.js'

// An ADT listener off loopback needs an allow-list of clients (or mutual TLS); a list that lets every
// address in, however it is written, is none.

const CATCH_ALL = [
  '0.0.0.0/0',
  '::/0',
  '10.1.2.3, 0.0.0.0/0',
  '0.0.0.0/1, 128.0.0.0/1',
  '::ffff:0:0/96',
  '::ffff:0.0.0.0/96',
  '::/1, 8000::/1',
  '::/1',
  '1.2.3.4/0',
  '0.0.0.0/2, 64.0.0.0/2, 128.0.0.0/1',
]
const LISTS = ['10.1.2.3', '10.0.0.0/8, 192.168.0.0/16', '::1', 'fd00::/8', '0.0.0.0/1', '0.0.0.0/2, 128.0.0.0/1']

t.test('a list that lets every address in, however written', async (t) => {
  for (const list of CATCH_ALL) t.ok(coversEveryAddress(list), `${list}: every address`)
  for (const list of LISTS) t.notOk(coversEveryAddress(list), `${list}: an allow-list`)
})

t.test('off loopback, a catch-all HL7_ALLOWED_ADDRESSES does not stand for an allow-list', async (t) => {
  const off = { HL7_PORT: '2575', HL7_HOST: '0.0.0.0' }
  for (const list of CATCH_ALL) {
    t.throws(() => loadConfig({ ...off, HL7_ALLOWED_ADDRESSES: list }), ConfigError, list)
    t.throws(() => loadConfig({ ...off, HL7_ALLOWED_ADDRESSES: list }), /HL7_HOST=.*0\.0\.0\.0\/0 or ::\/0, is none/)
  }
  for (const list of LISTS) t.ok(loadConfig({ ...off, HL7_ALLOWED_ADDRESSES: list }), `${list}: accepted`)
  t.ok(loadConfig({ HL7_PORT: '2575', HL7_ALLOWED_ADDRESSES: '0.0.0.0/0' }), 'on loopback the list is not the guard')
})
