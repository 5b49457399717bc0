// The package with kafkajs: a consumer group sharing a topic, a refusal by
// a VAST rule, retention driven by the broker's clock, and injected faults,
// each checked through the control plane.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { Kafka, logLevel, CompressionTypes, Partitioners } = require('kafkajs')
const { startBroker, AssertionError, ControlPlaneError } = require('vastfake')

let broker
test.before(async () => { broker = await startBroker() })
test.after(() => broker && broker.stop())
test.beforeEach(async () => {
  await broker.clearFaults()
  await broker.reset()
  await broker.clearRequests()
})

const kafkaFor = (b, clientId) => new Kafka({
  clientId,
  brokers: [b.bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 50, retries: 5 }
})

async function createTopic (kafka, topic, numPartitions, configEntries = []) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions, configEntries }], waitForLeaders: true })
  } finally {
    await admin.disconnect()
  }
}

async function produce (kafka, topic, messages, options = {}) {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  try {
    return await producer.send({ topic, messages, ...options })
  } finally {
    await producer.disconnect()
  }
}

test('a consumer group shares a topic and commits', async () => {
  const kafka = kafkaFor(broker, 'billing')
  await createTopic(kafka, 'orders', 4)
  const messages = []
  for (let i = 0; i < 40; i++) messages.push({ key: `customer-${i % 7}`, value: `order-${i}`, partition: i % 4 })
  await produce(kafka, 'orders', messages)

  const read = []
  const consumers = []
  try {
    for (let n = 0; n < 2; n++) {
      const c = kafkaFor(broker, `billing-${n}`).consumer({ groupId: 'billing', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
      consumers.push(c)
      await c.connect()
      await c.subscribe({ topic: 'orders', fromBeginning: true })
      await c.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => { read.push({ n, partition, offset: Number(message.offset) }) }
      })
    }
    const group = await broker.waitGroupStable('billing', { members: 2 })
    assert.deepStrictEqual(group.members.map(m => m.clientId).sort(), ['billing-0', 'billing-1'])
    assert.deepStrictEqual(group.members.flatMap(m => m.assignment.orders).sort(), [0, 1, 2, 3])
    await broker.waitFor('every record read', () => new Set(read.map(r => `${r.partition}:${r.offset}`)).size === 40)
    // Each member commits the partitions the broker says it owns.
    for (const m of group.members) {
      const c = consumers[Number(m.clientId.slice(-1))]
      await c.commitOffsets(m.assignment.orders.map(p => ({ topic: 'orders', partition: p, offset: '10' })))
    }
    for (let p = 0; p < 4; p++) await broker.waitCommitted('billing', 'orders', p, 10)
    for (let p = 0; p < 4; p++) assert.strictEqual(await broker.lag('billing', 'orders', p), 0)
  } finally {
    for (const c of consumers) await c.disconnect()
  }
  assert.deepStrictEqual(await broker.values('orders', 1), Array.from({ length: 10 }, (_, i) => `order-${4 * i + 1}`))
  const recs = await broker.records('orders', 1)
  assert.strictEqual(recs[0].key.toString(), 'customer-1')
  assert.ok((await broker.rebalances({ group: 'billing' })).some(r => r.members.length === 2))
  await broker.assertNoRefusals()
})

test('VAST refuses compressed batches, and the assertion says which rule', async () => {
  const kafka = kafkaFor(broker, 'clicks')
  await createTopic(kafka, 'clicks', 1)
  await assert.rejects(produce(kafka, 'clicks', [{ value: 'x'.repeat(1000) }], { compression: CompressionTypes.GZIP, acks: -1 }))

  const refused = await broker.assertRefused('NoCompression', { api: 'Produce' })
  assert.strictEqual(refused[0].clientId, 'clicks')
  await assert.rejects(broker.assertNoRefusals(), err => {
    assert.ok(err instanceof AssertionError)
    assert.match(err.message, /^\d+ requests? (was|were) refused by VAST rules:\n {2}Produce v\d+ from client "clicks": .* by VAST rule NoCompression/)
    return true
  })
  await assert.rejects(broker.assertRefused('MaxGroups'), /no request was refused by VAST rule MaxGroups; the refusals were/)
})

test('retention follows the broker clock', async (t) => {
  const b = await startBroker({ manualClock: true, topics: ['events:1:retention.ms=60000'] })
  t.after(() => b.stop())
  const kafka = kafkaFor(b, 'events')
  await produce(kafka, 'events', [{ value: 'e-0' }, { value: 'e-1' }, { value: 'e-2' }])
  assert.strictEqual(await b.endOffset('events', 0), 3)

  await b.advance('30s') // younger than retention.ms: kept
  assert.deepStrictEqual(await b.values('events'), ['e-0', 'e-1', 'e-2'])
  await b.advance(2 * 60_000)
  await b.waitFor('retention to delete the records', async () => (await b.topic('events')).partitions[0].logStartOffset === 3)
  assert.deepStrictEqual(await b.records('events'), [])
  await assert.rejects(broker.advance('1s'), err => err instanceof ControlPlaneError && err.status === 409)
})

test('injected faults, failover and restart', async () => {
  const kafka = kafkaFor(broker, 'payments')
  await createTopic(kafka, 'payments', 1)
  const fault = await broker.injectFault({ api: 'Produce', err: 'NOT_LEADER_FOR_PARTITION', count: 2, topic: 'payments' })
  assert.strictEqual(fault.topic, 'payments')
  assert.ok(!fault.partitions) // every partition

  await produce(kafka, 'payments', [{ value: 'p-1' }]) // kafkajs retries through both
  const faulted = (await broker.requests({ api: 'Produce' })).filter(r => r.fault)
  assert.strictEqual(faulted.length, 2)
  assert.ok(faulted.every(r => r.error === 'NOT_LEADER_FOR_PARTITION'))
  assert.deepStrictEqual(await broker.values('payments'), ['p-1'])

  const c = kafka.consumer({ groupId: 'ledger', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
  try {
    await c.connect()
    await c.subscribe({ topic: 'payments', fromBeginning: true })
    await c.run({ autoCommit: false, eachMessage: async () => {} })
    await broker.waitGroupStable('ledger', { members: 1 })
    await c.commitOffsets([{ topic: 'payments', partition: 0, offset: '1' }])
    await broker.waitCommitted('ledger', 'payments', 0, 1)
  } finally {
    await c.disconnect()
  }
  await broker.failover() // VAST does not replicate committed offsets
  assert.strictEqual(await broker.committed('ledger', 'payments', 0), null)
  await assert.rejects(broker.assertCommitted('ledger', 'payments', 0, 1), /group ledger committed nothing for payments\/0/)

  await broker.failNext('Produce', 'TOPIC_AUTHORIZATION_FAILED')
  await assert.rejects(produce(kafka, 'payments', [{ value: 'p-2' }]), /authoriz/i)
  await broker.assertNoRefusals() // a fault is not a VAST rule

  await broker.dropConnections()
  await broker.restart()
  await produce(kafka, 'payments', [{ value: 'p-3' }]) // reconnects after both
  assert.deepStrictEqual(await broker.values('payments'), ['p-1', 'p-3'])
  assert.strictEqual(await broker.latency('Fetch', 5), '5ms')
  assert.strictEqual(await broker.staleEndOffset('30s'), '30s')
  assert.strictEqual(await broker.staleEndOffset(0), '0s')
})

test('compaction and offset gaps', async () => {
  const kafka = kafkaFor(broker, 'accounts')
  await createTopic(kafka, 'accounts', 1, [{ name: 'cleanup.policy', value: 'compact' }])
  await createTopic(kafka, 'plain', 1)
  const send = messages => produce(kafka, 'accounts', messages.map(([key, value]) => ({ key, value, partition: 0 })))

  await send([['alice', '10'], ['bob', '20']]) // offsets 0, 1
  await broker.skipOffsets('accounts', 0, 5) // the next batch starts at 2 + 5
  await send([['alice', '15']]) // offset 7: alice's newest
  await send([['carol', '30']]) // offset 8: the last batch, which compaction leaves alone
  assert.strictEqual(await broker.endOffset('accounts', 0), 9)
  assert.deepStrictEqual((await broker.records('accounts')).map(r => r.offset), [0, 1, 7, 8])

  const [done, ...more] = await broker.compact('accounts')
  assert.deepStrictEqual(more, [])
  assert.deepStrictEqual([done.partition, done.compacted, done.recordsRemoved, done.tombstonesRemoved, done.cleanedTo],
    [0, true, 1, 0, 8])
  assert.ok(done.bytesAfter < done.bytesBefore, JSON.stringify(done))
  const left = [[1, 'bob', '20'], [7, 'alice', '15'], [8, 'carol', '30']]
  assert.deepStrictEqual((await broker.records('accounts')).map(r => [r.offset, r.key.toString(), r.value.toString()]), left)
  assert.strictEqual(await broker.endOffset('accounts', 0), 9) // offsets keep their values
  assert.strictEqual((await broker.compact('accounts'))[0].compacted, false)

  const got = []
  const c = kafka.consumer({ groupId: 'reader', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
  try {
    await c.connect()
    await c.subscribe({ topic: 'accounts', fromBeginning: true })
    await c.run({ autoCommit: false, eachMessage: async ({ message: m }) => { got.push([Number(m.offset), m.key.toString(), m.value.toString()]) } })
    await broker.waitFor('the consumer to read 3 records', () => got.length >= 3, { describe: () => JSON.stringify(got) })
  } finally {
    await c.disconnect()
  }
  assert.deepStrictEqual(got, left)

  const refused = (p, status, re) => assert.rejects(p, e => e instanceof ControlPlaneError && e.status === status && re.test(e.message))
  await refused(broker.compact('nope'), 404, /404 .*no topic nope to compact/)
  await refused(broker.compact('plain'), 409, /409 .*create plain with cleanup.policy=compact/)
  await refused(broker.skipOffsets('accounts', 3, 1), 404, /404 .*no partition 3 of topic accounts/)
  await refused(broker.skipOffsets('accounts', 0, 0), 400, /400 .*at least 1/)
  await assert.rejects(broker.skipOffsets('accounts', 0, '5'), TypeError)
  await broker.assertNoRefusals()
})

test('several brokers, and one down', async () => {
  // Three broker ids, each on its own address: Metadata lists them all,
  // partition p is led by broker p mod 3, and a broker taken down refuses
  // connections while the others serve. One replica per partition: with
  // three, acks=all would wait for broker 1 everywhere until it is fenced,
  // as on Kafka.
  const b = await startBroker({ profile: 'kafka', brokers: 3, topics: ['orders:3'], args: ['-default-replication-factor', '1'] })
  try {
    const listed = await b.brokers()
    assert.deepStrictEqual(listed.map((x) => x.id), [0, 1, 2])
    assert.strictEqual(listed[0].addr, b.bootstrap)
    const kafka = kafkaFor(b, 'several')
    const admin = kafka.admin()
    await admin.connect()
    try {
      const md = await admin.fetchTopicMetadata({ topics: ['orders'] })
      assert.deepStrictEqual(md.topics[0].partitions.map((p) => [p.partitionId, p.leader]).sort(), [[0, 0], [1, 1], [2, 2]])
    } finally {
      await admin.disconnect()
    }

    await b.brokerDown(1)
    assert.deepStrictEqual((await b.brokers()).map((x) => x.down), [false, true, false])
    await assert.rejects(b.brokerDown(1), (e) => e instanceof ControlPlaneError && e.status === 409)
    await assert.rejects(b.brokerUp(7), (e) => e instanceof ControlPlaneError && e.status === 404)
    await produce(kafka, 'orders', [{ value: 'to broker 0', partition: 0 }])
    await b.brokerUp(1)
    await produce(kafka, 'orders', [{ value: 'to broker 1', partition: 1 }])
    assert.strictEqual(await b.endOffset('orders', 0), 1)
    assert.strictEqual(await b.endOffset('orders', 1), 1)

    // The request log tells which broker served what.
    const onBroker1 = await b.requests({ api: 'Produce', broker: 1 })
    assert.ok(onBroker1.some((r) => r.broker === 1 && !r.error), 'the produce for partition 1 went to broker 1')

    // A leader moved: kafkajs finds the new one and produces on; the
    // request log shows it moved to broker 2.
    await b.clearRequests()
    assert.deepStrictEqual(await b.moveLeader('orders', 0, 2), { topic: 'orders', partition: 0, leader: 2, leaderEpoch: 1 })
    await produce(kafka, 'orders', [{ value: 'to broker 2', partition: 0 }])
    assert.strictEqual(await b.endOffset('orders', 0), 2)
    assert.ok((await b.waitServed('Produce', 2)).every((r) => r.broker === 2))
    await b.moveCoordinator('billing', 2)
    await b.failOverAddress(2) // VAST's virtual-IP failover: connections reset, the address serves again
    await produce(kafka, 'orders', [{ value: 'after the failover', partition: 0 }])
    assert.strictEqual(await b.endOffset('orders', 0), 3)
    await assert.rejects(b.moveLeader('orders', 9, 0), (e) => e instanceof ControlPlaneError && e.status === 404)
  } finally {
    await b.stop()
  }
})

test('a consumer group through a coordinator move and a virtual-IP failover', async () => {
  // kafka profile, three brokers: the old coordinator answers NOT_COORDINATOR
  // and kafkajs finds the new one; the failover resets its connections.
  const b = await startBroker({ profile: 'kafka', brokers: 3, topics: ['orders:3'] })
  const kafka = kafkaFor(b, 'group-moves')
  const consumer = kafka.consumer({ groupId: 'billing', retry: { initialRetryTime: 50, retries: 20 } })
  try {
    await consumer.connect()
    await consumer.subscribe({ topic: 'orders', fromBeginning: true })
    const seen = new Map()
    await consumer.run({ eachMessage: async ({ message }) => { seen.set(message.value.toString(), (seen.get(message.value.toString()) || 0) + 1) } })
    const batch = (from, to) => Array.from({ length: to - from }, (_, i) => ({ value: 'order-' + (from + i), partition: (from + i) % 3 }))
    await produce(kafka, 'orders', batch(0, 30))
    await b.waitFor('the first 30 orders read', () => seen.size === 30)

    const groups = await b.groups()
    assert.ok(groups.some((g) => g.name === 'billing'))
    await b.moveCoordinator('billing', 1)
    assert.strictEqual((await b.group('billing')).coordinator, 1)
    await b.clearRequests()
    await produce(kafka, 'orders', batch(30, 60))
    await b.waitServed('Heartbeat', 1) // kafkajs found its new coordinator
    await b.waitFor('60 orders read after the coordinator moved', () => seen.size === 60)
    await b.failOverAddress(1)
    await produce(kafka, 'orders', batch(60, 90))
    await b.waitFor('90 orders read after its address failed over', () => seen.size === 90)
    // kafkajs rejoins its group when its coordinator moves and reads again
    // what it had not committed yet: every order at least once, as on Kafka.
    for (let i = 0; i < 90; i++) assert.ok(seen.get('order-' + i) >= 1, 'order-' + i + ' read')
  } finally {
    await consumer.disconnect()
    await b.stop()
  }
})

test('transactions in the kafka profile, through the control plane', async () => {
  const b = await startBroker({ profile: 'kafka', manualClock: true, topics: ['ledger:1'] })
  try {
    const kafka = kafkaFor(b, 'ledger-writer')
    const producer = kafka.producer({ transactionalId: 'ledger-writer', idempotent: true, maxInFlightRequests: 1, transactionTimeout: 10000 })
    await producer.connect()
    for (const [value, commit] of [['dropped', false], ['kept', true]]) {
      const txn = await producer.transaction()
      await txn.send({ topic: 'ledger', messages: [{ partition: 0, value }] })
      await (commit ? txn.commit() : txn.abort())
    }
    const recs = await b.records('ledger')
    assert.deepStrictEqual(recs.map(r => [r.value && r.value.toString(), r.marker, r.transaction]),
      [['dropped', '', 'aborted'], [null, 'abort', ''], ['kept', '', 'committed'], [null, 'commit', '']])
    assert.ok(recs.every(r => r.producerId > 0))
    const t = await b.transaction('ledger-writer')
    assert.deepStrictEqual([t.state, t.committed, t.aborted, t.timeoutMs], ['CompleteCommit', 1, 1, 10000])

    const open = await producer.transaction()
    await open.send({ topic: 'ledger', messages: [{ partition: 0, value: 'late' }] })
    const [o] = await b.transactions({ openOnly: true })
    assert.deepStrictEqual(o.partitions, [{ topic: 'ledger', partition: 0 }])
    await b.advance('10s')
    const after = await b.transaction('ledger-writer')
    assert.deepStrictEqual([after.state, after.timedOut], ['CompleteAbort', 1])
    await assert.rejects(open.commit())
    await assert.rejects(b.transaction('nobody'), ControlPlaneError)
    await producer.disconnect()
  } finally {
    await b.stop()
  }
})
