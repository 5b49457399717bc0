// SASL users given to the launcher (args: ['-user', ...]) with kafkajs: a
// user logs in with SCRAM-SHA-512 in the kafka profile and produces and
// consumes, and VAST refuses SCRAM with the rule that says so.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { Kafka, logLevel } = require('kafkajs')
const { startBroker } = require('vastfake')

const USER = ['-user', 'app:app-secret']
const kafkaFor = (b, mechanism) => new Kafka({
  clientId: 'scram-js',
  brokers: [b.bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 0 },
  sasl: { mechanism, username: 'app', password: 'app-secret' }
})

test('SCRAM-SHA-512 in the kafka profile', async () => {
  const b = await startBroker({ profile: 'kafka', topics: ['orders:1'], args: USER })
  try {
    const kafka = kafkaFor(b, 'scram-sha-512')
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: 'orders', messages: [{ value: 'o-0' }, { value: 'o-1' }] })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: 'scram-billing' })
    await consumer.connect()
    await consumer.subscribe({ topic: 'orders', fromBeginning: true })
    const seen = []
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('read ' + seen.length + ' of 2 within 30 s')), 30_000)
      consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value.toString())
          if (seen.length === 2) { clearTimeout(timer); resolve() }
        }
      }).catch(reject)
    })
    await consumer.disconnect()
    assert.deepStrictEqual(seen, ['o-0', 'o-1'])
    const logins = (await b.requests({ api: 'SaslAuthenticate' })).filter(r => r.user === 'app' && r.errorCode === 0)
    assert.ok(logins.length >= 2, `${logins.length} SCRAM messages answered`)
  } finally {
    await b.stop()
  }
})

test('VAST refuses SCRAM', async () => {
  const b = await startBroker({ topics: ['orders:1'], args: USER })
  try {
    const admin = kafkaFor(b, 'scram-sha-256').admin()
    await assert.rejects(admin.connect(), /does not support the requested SASL mechanism/)
    const refused = await b.assertRefused('PlainSASLOnly')
    assert.match(refused[0].message, /\(rule PlainSASLOnly\): use SASL\/PLAIN over TLS$/)
  } finally {
    await b.stop()
  }
})
