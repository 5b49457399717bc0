// Transactions with kafkajs (npm kafkajs 2.2.4), run against the vastfake
// binary in the kafka profile on a manual clock by TestKafkaJSTransactions
// (../transactions_test.go), which compares stdout with
// expected-transactions.txt.
//
// Consume-transform-produce: records copied from one topic to another in
// transactions that also send the group's offsets, the first aborted; a
// zombie producer fenced by a newer one with its transactionalId; and a
// transaction the broker aborts at its timeout when the control plane
// advances its clock. kafkajs consumers read committed by default: they
// must never see an aborted record.
//
// Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP (http://host:port/).

'use strict'

const { Kafka, logLevel } = require('kafkajs')

const BOOTSTRAP = process.env.KAFKA_BOOTSTRAP
const HTTP = process.env.VASTFAKE_HTTP
if (!BOOTSTRAP || !HTTP) fail('set KAFKA_BOOTSTRAP and VASTFAKE_HTTP')

// One deadline bounds the whole run; it never decides behaviour.
const deadline = setTimeout(() => fail('timed out after 90s'), 90_000)

function fail (why) {
  process.stderr.write('FAIL: ' + why + '\n')
  process.exit(1)
}

const kafka = new Kafka({
  clientId: 'kafkajs-txn',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.ERROR,
  logCreator: () => ({ label, log }) => process.stderr.write(`${label} ${log.message}\n`),
  retry: { initialRetryTime: 100, retries: 3 }
})

async function control (path, method = 'GET') {
  const resp = await fetch(HTTP + path, { method })
  return resp.json()
}

function txnProducer (id, transactionTimeout = 60000) {
  return kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, transactionTimeout })
}

// readCommitted returns every value a read_committed consumer (kafkajs's
// default) reads from partition 0 of topic, up to its end.
async function readCommitted (topic) {
  const admin = kafka.admin()
  await admin.connect()
  const [{ high }] = await admin.fetchTopicOffsets(topic)
  await admin.disconnect()
  const consumer = kafka.consumer({ groupId: 'reader-' + topic })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) got.push(m.value.toString())
        // The batch's last offset passes the markers read_committed skips.
        if (Number(batch.lastOffset()) + 1 >= Number(high) || Number(batch.highWatermark) <= Number(batch.lastOffset()) + 2) resolve()
      }
    }).catch(reject)
    // Nothing committed at all: the consumer reads no batch.
    control('topics/' + topic + '/partitions/0/records?limit=10000').then(recs => {
      if (!recs.some(r => !r.marker && r.transaction !== 'aborted' && r.transaction !== 'open')) resolve()
    })
  })
  await consumer.disconnect()
  return got
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ waitForLeaders: false, topics: ['js-in', 'js-out', 'js-fence', 'js-slow'].map(topic => ({ topic, numPartitions: 1 })) })
  await admin.disconnect()

  const plain = kafka.producer()
  await plain.connect()
  await plain.send({ topic: 'js-in', messages: [...Array(10).keys()].map(i => ({ partition: 0, value: 'v' + i })) })
  await plain.disconnect()

  // Copy js-in to js-out in transactions that send the group's offsets; the
  // first aborts, and the consumer goes back to the committed offset.
  const etl = txnProducer('js-etl')
  await etl.connect()
  const consumer = kafka.consumer({ groupId: 'js-etl' })
  await consumer.connect()
  await consumer.subscribe({ topic: 'js-in', fromBeginning: true })
  let copied = 0
  let round = 0
  await new Promise((resolve, reject) => {
    consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const txn = await etl.transaction()
        await txn.send({ topic: 'js-out', messages: batch.messages.map(m => ({ partition: 0, value: 'out-' + m.value })) })
        const next = String(Number(batch.lastOffset()) + 1)
        await txn.sendOffsets({ consumerGroupId: 'js-etl', topics: [{ topic: 'js-in', partitions: [{ partition: 0, offset: next }] }] })
        if (round++ === 0) {
          await txn.abort()
          console.log('aborted the first transaction')
          consumer.seek({ topic: 'js-in', partition: 0, offset: batch.messages[0].offset })
          return
        }
        await txn.commit()
        copied += batch.messages.length
        if (copied >= 10) resolve()
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  await etl.disconnect()
  console.log('copied ' + copied + ' records in committed transactions')
  console.log('read committed:', (await readCommitted('js-out')).join(' '))
  const offsets = await (async () => {
    const a = kafka.admin()
    await a.connect()
    const o = await a.fetchOffsets({ groupId: 'js-etl', topics: ['js-in'] })
    await a.disconnect()
    return o
  })()
  console.log('group js-etl committed offset', offsets[0].partitions[0].offset)
  const records = await control('topics/js-out/partitions/0/records?limit=10000')
  const markers = records.filter(r => r.marker).map(r => r.marker)
  console.log('markers: first ' + markers[0] + ', then only commits: ' + markers.slice(1).every(m => m === 'commit') +
    '; aborted records kept in the log: ' + records.some(r => r.transaction === 'aborted'))

  // A zombie fenced by a newer producer with its transactionalId.
  const zombie = txnProducer('js-fenced')
  await zombie.connect()
  const zt = await zombie.transaction()
  await zt.send({ topic: 'js-fence', messages: [{ partition: 0, value: 'zombie' }] })
  const fresh = txnProducer('js-fenced')
  await fresh.connect()
  const ft = await fresh.transaction()
  await ft.send({ topic: 'js-fence', messages: [{ partition: 0, value: 'fresh' }] })
  await ft.commit()
  try {
    await zt.commit()
    console.log('the zombie committed')
  } catch (e) {
    console.log('zombie commit refused: ' + e.type)
  }
  await zombie.disconnect()
  await fresh.disconnect()
  console.log('read committed:', (await readCommitted('js-fence')).join(' '))

  // A transaction the broker aborts at its timeout, on its manual clock.
  const slow = txnProducer('js-slow', 10000)
  await slow.connect()
  const st = await slow.transaction()
  await st.send({ topic: 'js-slow', messages: [{ partition: 0, value: 'late' }] })
  console.log('before the timeout: ' + (await control('transactions/js-slow')).state)
  await control('clock/advance?d=10s', 'POST')
  const state = await control('transactions/js-slow')
  console.log('after 10s on the broker\'s clock: ' + state.state + ', timed out ' + state.timedOut)
  try {
    await st.commit()
    console.log('the timed-out transaction committed')
  } catch (e) {
    console.log('commit after the timeout refused: ' + e.type)
  }
  await slow.disconnect()
  const again = txnProducer('js-slow')
  await again.connect()
  const at = await again.transaction()
  await at.send({ topic: 'js-slow', messages: [{ partition: 0, value: 'on time' }] })
  await at.commit()
  await again.disconnect()
  console.log('read committed:', (await readCommitted('js-slow')).join(' '))
}

main().then(() => { clearTimeout(deadline) }, e => fail(e.stack || String(e)))
