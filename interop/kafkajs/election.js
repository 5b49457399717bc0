// Leader election with kafkajs (npm kafkajs 2.2.4), run against the
// vastfake binary (kafka profile, three brokers, "orders" of three
// partitions with three replicas each) by TestKafkaJSThroughAnElection
// (../election_test.go), which compares stdout with
// ../election/expected.txt, the Python clients' output.
//
// A producer with acks=all (-1) and a consumer group: 30 records read; the
// broker that coordinates the group (and leads one partition) taken down
// for good through the control plane; 30 more produced and read without
// waiting for it to come back. The partition it led and the group's
// coordinator move to other brokers after the election delay; nothing
// acknowledged is lost.
//
// Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP (http://host:port/).

'use strict'

const { Kafka, logLevel } = require('kafkajs')

const BOOTSTRAP = process.env.KAFKA_BOOTSTRAP
const HTTP = process.env.VASTFAKE_HTTP
if (!BOOTSTRAP || !HTTP) fail('set KAFKA_BOOTSTRAP and VASTFAKE_HTTP')
const TOPIC = 'orders'
const GROUP = 'billing-js'

// One deadline bounds the whole run; it never decides behaviour.
const deadline = setTimeout(() => fail('timed out after 90s'), 90_000)

function fail (why) {
  process.stderr.write('FAIL: ' + why + '\n')
  process.exit(1)
}

const kafka = new Kafka({
  clientId: 'kafkajs-election',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.ERROR,
  logCreator: () => ({ label, log }) => process.stderr.write(`${label} ${log.message}\n`),
  retry: { initialRetryTime: 50, maxRetryTime: 500, retries: 30 }
})

async function control (path, method = 'GET') {
  const resp = await fetch(HTTP + path, { method })
  return resp.json()
}

async function main () {
  const producer = kafka.producer()
  await producer.connect()
  const send = async (i) => {
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'order-' + i, value: `{"order": ${i}}`, partition: i % 3 }] })
  }
  const seen = new Map()
  const consumer = kafka.consumer({ groupId: GROUP, heartbeatInterval: 100, retry: { initialRetryTime: 50, maxRetryTime: 500, retries: 30 } })
  await consumer.connect()
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ message }) => {
      const k = message.key.toString()
      seen.set(k, (seen.get(k) || 0) + 1)
    }
  })
  const readUntil = async (n) => {
    while (seen.size < n) await new Promise(resolve => setTimeout(resolve, 20))
  }

  for (let i = 0; i < 30; i++) await send(i)
  console.log('produced 30 with acks=all')
  await readUntil(30)
  console.log('the group read 30')

  const coordinator = (await control('groups/' + GROUP)).coordinator
  const led = (await control('topics/' + TOPIC)).partitions.filter(p => p.leader === coordinator)
  if (led.length !== 1) fail(`broker ${coordinator} leads ${led.length} partitions of orders, want 1`)
  await control(`brokers/${coordinator}/down`, 'POST')
  console.log("broker down: the group's coordinator and a partition's leader")

  for (let i = 30; i < 60; i++) await send(i)
  console.log('produced 30 more with acks=all')
  await readUntil(60)
  console.log('the group read 60, none lost')

  const down = (await control('brokers')).brokers.filter(b => b.down).map(b => b.id)
  if (down.length !== 1 || down[0] !== coordinator) fail(`brokers down: ${down}, want only ${coordinator}`)
  const p = (await control('topics/' + TOPIC)).partitions[led[0].partition]
  if (p.leader !== coordinator && p.leaderEpoch === 1 && !p.isr.includes(coordinator)) {
    console.log('the partition has a new leader at epoch 1, the down broker out of its in-sync set')
  } else {
    fail('partition after the election: ' + JSON.stringify(p))
  }
  if ((await control('groups/' + GROUP)).coordinator !== coordinator) console.log('the group has a new coordinator')
  const stored = (await control('topics/' + TOPIC)).partitions.reduce((n, p) => n + p.highWatermark, 0)
  console.log('stored ' + stored)
  await consumer.disconnect()
  await producer.disconnect()
  clearTimeout(deadline)
}

main().catch(e => fail(e.stack || String(e)))
