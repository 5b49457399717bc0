// A first test with vastfake and kafkajs: the app reads orders as the
// consumer group "billing" and commits them; the test checks the committed
// offset and that no VAST rule refused anything.
const test = require('node:test')
const assert = require('node:assert')
const { Kafka, logLevel } = require('kafkajs')
const { startBroker } = require('vastfake')

// readOrders stands for your code: it reads n orders as the consumer group
// "billing" and commits what it read.
async function readOrders (kafka, n) {
  const consumer = kafka.consumer({ groupId: 'billing' })
  await consumer.connect()
  try {
    await consumer.subscribe({ topic: 'orders', fromBeginning: true })
    const orders = []
    await new Promise((resolve, reject) => {
      consumer.run({
        eachMessage: async ({ message }) => {
          orders.push(message.value.toString())
          if (orders.length === n) resolve()
        }
      }).catch(reject)
    })
    await consumer.commitOffsets([{ topic: 'orders', partition: 0, offset: String(n) }])
    return orders
  } finally {
    await consumer.disconnect()
  }
}

test('billing commits what it read', async (t) => {
  const broker = await startBroker({ topics: ['orders:1'] }) // a VAST broker on a free port
  t.after(() => broker.stop())
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING })
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  await producer.send({ topic: 'orders', messages: [{ value: 'o-1' }, { value: 'o-2' }, { value: 'o-3' }] })
  await producer.disconnect()

  assert.deepStrictEqual(await readOrders(kafka, 3), ['o-1', 'o-2', 'o-3'])
  await broker.assertCommitted('billing', 'orders', 0, 3) // the next offset to read
  await broker.assertNoRefusals()
})
