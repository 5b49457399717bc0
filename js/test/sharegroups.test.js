// Share groups (KIP-932, queues for Kafka) with @kafkats/client's share
// consumer, a client of its own (pure TypeScript, not librdkafka), against
// the kafka profile: every job processed and acknowledged, what the control
// plane shows of a share group, and the at-least-once queue test a test
// author writes with the manual clock: a worker hangs holding a job, the
// clock moves past its acquisition lock, another worker gets the job again.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { KafkaClient } = require('@kafkats/client')
const { startBroker } = require('vastfake')

let broker
test.before(async () => { broker = await startBroker({ profile: 'kafka', manualClock: true }) })
test.after(() => broker && broker.stop())
test.beforeEach(async () => { await broker.reset() })

async function clientFor (b, clientId) {
  const client = new KafkaClient({ brokers: [b.bootstrap], clientId, logLevel: 'silent' })
  await client.connect()
  return client
}

async function createTopic (client, name, partitions) {
  await client.createTopics([{ name, numPartitions: partitions, replicationFactor: 1 }])
}

async function produce (client, topic, values) {
  const producer = client.producer()
  try {
    await producer.send(topic, values.map(v => ({ value: Buffer.from(v), partition: 0 })))
  } finally {
    await producer.disconnect()
  }
}

// startWorker runs a share consumer of topic in group; handle gets each
// message. It returns the consumer and the promise runEach returns.
function startWorker (client, group, topic, handle) {
  const consumer = client.shareConsumer({ groupId: group, maxWaitMs: 200 })
  consumer.on('error', () => {}) // retried by the consumer; the test checks outcomes
  const running = consumer.runEach(topic, handle)
  return { consumer, running }
}

// waitForShareState waits until group has share state for the partition:
// the share consumer's first fetch set its start offset (latest, the
// default of share.auto.offset.reset), so what is produced next is read.
function waitForShareState (group, topic, partition) {
  return broker.waitFor(`share group ${group} to fetch ${topic}/${partition}`, async () => {
    const g = await broker.findGroup(group)
    return g && (g.sharePartitions || []).some(p => p.topic === topic && p.partition === partition)
  })
}

test('a share consumer processes every job and the group shows it', async () => {
  const client = await clientFor(broker, 'kafkats-worker')
  await createTopic(client, 'jobs', 1)
  const done = []
  const w = startWorker(client, 'workers', 'jobs', async m => { done.push(m.value.toString()) })
  try {
    await waitForShareState('workers', 'jobs', 0)
    const jobs = Array.from({ length: 20 }, (_, i) => `job-${i}`)
    await produce(client, 'jobs', jobs)
    await broker.waitShareAcknowledged('workers', 'jobs', 0, 19)
    assert.deepStrictEqual([...new Set(done)].sort(), [...jobs].sort())

    const g = await broker.group('workers')
    assert.strictEqual(g.groupProtocol, 'share')
    assert.strictEqual(g.state, 'Stable')
    assert.strictEqual(g.members.length, 1)
    assert.deepStrictEqual(g.members[0].assignment, { jobs: [0] })
    const p = g.sharePartitions.find(x => x.topic === 'jobs' && x.partition === 0)
    assert.strictEqual(p.startOffset, 20)
    assert.strictEqual(p.acknowledged, 20)
    assert.deepStrictEqual(p.acquired, [])
  } finally {
    await w.consumer.stop()
    await client.disconnect()
  }
})

test('a job held by a hung worker comes back when the manual clock passes its lock', async () => {
  const client = await clientFor(broker, 'kafkats-queue')
  await createTopic(client, 'queue', 1)
  let release
  const hang = new Promise(resolve => { release = resolve })
  const hung = startWorker(client, 'q', 'queue', async () => { await hang })
  let other
  try {
    await waitForShareState('q', 'queue', 0)
    await produce(client, 'queue', ['resize-image-42'])
    // The hung worker holds the job, locked for 30 s on the broker's clock.
    const held = await broker.waitFor('the job acquired', async () => {
      const p = (await broker.group('q')).sharePartitions[0]
      return p.acquired.length === 1 && p.acquired[0]
    })
    assert.strictEqual(held.deliveryCount, 1)
    assert.strictEqual(Date.parse(held.lockDeadline) - Date.parse((await broker.clock()).now), 30_000)

    const got = []
    other = startWorker(client, 'q', 'queue', async m => { got.push([m.value.toString(), m.deliveryCount]) })
    await broker.waitGroup('q', { members: 2 })
    await broker.advance('30s')
    await broker.waitShareAcknowledged('q', 'queue', 0, 0)
    assert.deepStrictEqual(got, [['resize-image-42', 2]])
  } finally {
    release()
    await hung.consumer.stop()
    if (other) await other.consumer.stop()
    await client.disconnect()
  }
})

test('on VAST the share consumer fails at once; the audit profile runs it and reports it', async () => {
  const vast = await startBroker({ topics: ['orders:1'] })
  const audit = await startBroker({ profile: 'audit', topics: ['orders:1'] })
  try {
    // VAST (rule NoShareGroups): ShareGroupHeartbeat is not advertised, and
    // @kafkats/client refuses locally, from ApiVersions.
    let client = await clientFor(vast, 'billing-queue')
    let consumer = client.shareConsumer({ groupId: 'billing', maxWaitMs: 200 })
    consumer.on('error', () => {})
    await assert.rejects(consumer.runEach('orders', async () => {}),
      /Kafka feature unsupported: share-groups \(broker does not support ShareGroupHeartbeat\)/)
    await client.disconnect()

    // Audit: served as on Kafka 4.2, every request a finding of NoShareGroups.
    client = await clientFor(audit, 'billing-queue')
    consumer = client.shareConsumer({ groupId: 'billing', maxWaitMs: 200 })
    consumer.on('error', () => {})
    const got = []
    const running = consumer.runEach('orders', async m => { got.push(m.value.toString()) })
    await audit.waitFor('the share group fetched', async () => {
      const g = await audit.findGroup('billing')
      return g && g.sharePartitions && g.sharePartitions.length === 1
    })
    await produce(client, 'orders', ['invoice-1'])
    await audit.waitShareAcknowledged('billing', 'orders', 0, 0)
    assert.deepStrictEqual(got, ['invoice-1'])
    await consumer.stop()
    await running
    await client.disconnect()
    const findings = (await audit.findings()).filter(f => f.rule === 'NoShareGroups')
    const apis = new Set(findings.map(f => f.api))
    for (const api of ['ShareGroupHeartbeat', 'ShareFetch']) assert.ok(apis.has(api), `a finding for ${api}: ${[...apis]}`)
    for (const f of findings) {
      assert.strictEqual(f.group, 'billing')
      assert.match(f.advice, /consumer group/)
    }
  } finally {
    await vast.stop()
    await audit.stop()
  }
})
