// The client-matrix scenario for kafkajs (npm kafkajs 2.2.4, pure
// JavaScript), run against the vastfake binary by TestKafkaJSMatrix
// (../matrix_test.go), which compares stdout with expected.txt (VAST
// profile) or expected-kafka.txt (kafka profile).
//
// Create a topic with the admin client, produce, consume in a group and
// commit, rebalance onto a second member, delete the group and the topic;
// on the way, the VAST refusals as kafkajs reports them (a gzip batch, a
// value over 126 KB, an idempotent and a transactional producer), the
// compression refusal read back from the binary's HTTP control plane, and a
// compacted topic read across an offset gap and a compaction that the
// control plane drives. Every outcome is printed, so one script
// serves both profiles: what differs is the expected file.
//
// Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP
// (http://host:port/), KAFKAJS_LOG_LEVEL (kafkajs's log level on stderr:
// ERROR, WARN (the default), INFO or DEBUG).
//
// Run by hand against a running binary:
//
//	npm ci
//	KAFKA_BOOTSTRAP=127.0.0.1:9092 VASTFAKE_HTTP=http://127.0.0.1:8080/ node matrix.js

'use strict'

const { Kafka, logLevel, CompressionTypes, Partitioners } = require('kafkajs')

const BOOTSTRAP = process.env.KAFKA_BOOTSTRAP
const HTTP = process.env.VASTFAKE_HTTP
const TOPIC = 'kafkajs-orders'
const GROUP = 'kafkajs-billing'
const PARTITIONS = 4

if (!BOOTSTRAP || !HTTP) {
  fail('set KAFKA_BOOTSTRAP and VASTFAKE_HTTP')
}

// One deadline bounds the whole run; it never decides behaviour.
const deadline = setTimeout(() => fail('timed out after 90s'), 90_000)

function fail (why) {
  process.stderr.write('FAIL: ' + why + '\n')
  process.exit(1)
}

// kafkajs logs to stdout by default; everything it says goes to stderr here
// so that stdout holds only the lines compared with the expected file.
const level = logLevel[(process.env.KAFKAJS_LOG_LEVEL || 'WARN').toUpperCase()]
const logCreator = () => ({ namespace, label, log }) => {
  const { message, timestamp, logger, ...extra } = log
  process.stderr.write(`${timestamp} ${label} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

const kafka = new Kafka({
  clientId: 'kafkajs-matrix',
  brokers: [BOOTSTRAP],
  logLevel: level === undefined ? logLevel.WARN : level,
  logCreator,
  retry: { initialRetryTime: 100, retries: 3 }
})

// list prints an array on one line.
const list = a => '[' + a.join(', ') + ']'

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// until polls cond every 20 ms until it holds; the deadline ends a wait that
// never does.
async function until (cond) {
  while (!cond()) {
    await sleep(20)
  }
}

// producer makes a producer that never creates topics; every record names
// its partition, so the partitioner (and kafkajs's warning about its
// default) does not matter.
const producer = (options = {}) => kafka.producer({
  allowAutoTopicCreation: false,
  createPartitioner: Partitioners.DefaultPartitioner,
  ...options
})

// outcome runs fn and describes how it ended: what describe makes of its
// result, or the kafkajs error class, the Kafka error name when there is one,
// and the message, as a user of kafkajs sees them.
async function outcome (fn, describe = () => 'ok') {
  try {
    return describe(await fn())
  } catch (e) {
    const inner = e.cause || (e.errors && e.errors[0]) || (e.groups && e.groups[0] && e.groups[0].error)
    const type = e.type || (inner && inner.type)
    const message = inner && inner !== e.cause ? inner.message : e.message
    return `${e.name}${type ? ' ' + type : ''}: ${message}`
  }
}

// orderOf is the order number of a record of this scenario's orders, or
// undefined for the other records (the ones only the kafka profile stores).
function orderOf (value) {
  try {
    return JSON.parse(value).order
  } catch {
    return undefined
  }
}

// control sends method (GET unless given) to path on the control plane and
// returns the decoded JSON.
async function control (path, method = 'GET') {
  const resp = await fetch(HTTP + path, { method })
  if (!resp.ok) {
    fail(`${method} ${path}: ${resp.status}`)
  }
  return resp.json()
}

async function main () {
  // 1. Admin: create the topic (and a compacted one, which both profiles accept).
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] })
  console.log('created', TOPIC, 'with', PARTITIONS, 'partitions')
  // With validateOnly, waitForLeaders must be off: kafkajs would otherwise
  // wait for the leaders of a topic that is never created, against any
  // broker, and fail with UNKNOWN_TOPIC_OR_PARTITION.
  console.log('validateOnly create:', await outcome(async () => {
    await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'kafkajs-validate', numPartitions: 2 }] })
    return (await admin.listTopics()).includes('kafkajs-validate')
  }, exists => exists ? 'the topic exists' : 'valid, nothing created'))
  console.log('topic with segment.bytes=1048576:', await outcome(async () => {
    await admin.createTopics({
      topics: [{ topic: 'kafkajs-segments', numPartitions: 1, configEntries: [{ name: 'segment.bytes', value: '1048576' }] }]
    })
    await admin.deleteTopics({ topics: ['kafkajs-segments'] })
  }, () => 'created (and deleted)'))

  // 2. Produce: one keyed record per partition and round, offsets in order.
  const plain = producer()
  await plain.connect()
  const sent = await plain.send({
    topic: TOPIC,
    acks: -1,
    messages: Array.from({ length: 8 }, (_, i) => ({
      key: `order-${i}`,
      value: JSON.stringify({ order: i }),
      partition: i % PARTITIONS,
      headers: { source: 'kafkajs' }
    }))
  })
  console.log('produced 8 records; base offsets', sent.map(r => `${r.partition}:${r.baseOffset}`).sort().join(', '))

  // 3. What VAST refuses, as kafkajs reports it.
  const send = (messages, extra = {}) => () => plain.send({ topic: TOPIC, acks: -1, messages, ...extra })
  console.log('gzip batch:', await outcome(send([{ value: 'zipped', partition: 0 }], { compression: CompressionTypes.GZIP })))
  console.log('130 KB value:', await outcome(send([{ value: Buffer.alloc(130 << 10, 'x'), partition: 0 }])))
  console.log('missing topic:', await outcome(() => plain.send({ topic: 'kafkajs-missing', messages: [{ value: 'lost' }] })))
  const refusals = await control('requests?rule=NoCompression')
  console.log('request log:', refusals.length === 0
    ? 'no NoCompression refusal'
    : `${refusals[0].api} refused by rule ${refusals[0].rule} with ${refusals[0].error}`)
  await plain.disconnect()

  const idempotent = producer({ idempotent: true, maxInFlightRequests: 1 })
  console.log('idempotent producer:', await outcome(async () => {
    await idempotent.connect()
    await idempotent.send({ topic: TOPIC, acks: -1, messages: [{ value: 'once', partition: 1 }] })
  }, () => 'sent'))
  await idempotent.disconnect()
  const transactional = producer({ transactionalId: 'kafkajs-tx', idempotent: true, maxInFlightRequests: 1 })
  console.log('transactional producer:', await outcome(async () => {
    await transactional.connect()
    const tx = await transactional.transaction()
    await tx.send({ topic: TOPIC, messages: [{ value: 'in a transaction', partition: 1 }] })
    await tx.commit()
  }, () => 'committed'))
  await transactional.disconnect()

  // 4. A group member reads everything and commits. Offsets, not record
  // counts, say what was read: the kafka profile stores the records the
  // VAST profile refuses above.
  const assigned = {}
  const read = []
  const consumers = {}
  const consumer = async name => {
    const c = kafka.consumer({
      groupId: GROUP,
      sessionTimeout: 10_000,
      rebalanceTimeout: 10_000,
      heartbeatInterval: 100,
      maxWaitTimeInMs: 200
    })
    c.on(c.events.GROUP_JOIN, e => {
      assigned[name] = { partitions: (e.payload.memberAssignment[TOPIC] || []).sort(), protocol: e.payload.groupProtocol }
    })
    c.on(c.events.CRASH, e => fail(`${name} crashed: ${e.payload.error.name}: ${e.payload.error.message}`))
    await c.connect()
    await c.subscribe({ topic: TOPIC, fromBeginning: true })
    await c.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        read.push({ name, partition, offset: Number(message.offset), order: orderOf(message.value) })
      }
    })
    consumers[name] = c
    return c
  }
  // commit commits, for each member, the offset after the last record it read
  // of each partition.
  const commit = async () => {
    for (const [name, c] of Object.entries(consumers)) {
      const next = {}
      for (const r of read.filter(r => r.name === name)) {
        next[r.partition] = Math.max(next[r.partition] || 0, r.offset + 1)
      }
      await c.commitOffsets(Object.entries(next).map(([partition, offset]) => ({ topic: TOPIC, partition: Number(partition), offset: String(offset) })))
    }
  }
  const committed = async () => {
    const [t] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
    return t.partitions.sort((a, b) => a.partition - b.partition).map(p => `${p.partition}:${p.offset}`).join(', ')
  }
  const orders = rs => rs.map(r => r.order).filter(o => o !== undefined).sort((a, b) => a - b)

  await consumer('js-one')
  // Records, not offsets: a transaction's marker (kafka profile) takes an
  // offset that no consumer reads.
  let total = 0
  for (let p = 0; p < PARTITIONS; p++) {
    total += (await control(`topics/${TOPIC}/partitions/${p}/records?limit=10000`)).filter(r => !r.marker).length
  }
  await until(() => read.length >= total)
  console.log('js-one joined with protocol', assigned['js-one'].protocol, 'and owns', list(assigned['js-one'].partitions))
  console.log('js-one read orders', list(orders(read)), 'and', read.filter(r => r.order === undefined).length, 'other records')
  await commit()
  console.log('committed', await committed())

  // 5. A second member joins: the round-robin assignor gives two partitions
  // each, and the group resumes from the commits (nothing is read twice).
  const before = read.length
  await consumer('js-two')
  const owned = () => ['js-one', 'js-two'].map(n => (assigned[n] || { partitions: [] }).partitions.length)
  await until(() => owned()[0] === 2 && owned()[1] === 2)
  console.log('rebalanced: js-one and js-two own', owned().join(' and '), 'partitions, together',
    list([...assigned['js-one'].partitions, ...assigned['js-two'].partitions].sort()))
  const described = (await admin.describeGroups([GROUP])).groups[0]
  console.log('describeGroups:', described.state, described.protocol, described.members.length, 'members')
  const late = producer()
  await late.connect()
  await late.send({ topic: TOPIC, acks: -1, messages: [8, 9, 10, 11].map(i => ({ key: `order-${i}`, value: JSON.stringify({ order: i }), partition: i % PARTITIONS })) })
  await late.disconnect()
  await until(() => read.length >= before + 4)
  const after = read.slice(before)
  console.log('after the rebalance the group read orders', list(orders(after)),
    'js-one', after.filter(r => r.name === 'js-one').length, 'and js-two', after.filter(r => r.name === 'js-two').length)
  await commit()
  const group = await control('groups/' + GROUP)
  console.log('control plane: group', group.state, 'protocol', group.protocol, 'lag',
    list(group.partitions.sort((a, b) => a.partition - b.partition).map(p => p.lag)))

  // 6. Delete the group: refused while it has members, then done.
  console.log('deleteGroups with members:', await outcome(() => admin.deleteGroups([GROUP])))
  await consumers['js-one'].disconnect()
  await consumers['js-two'].disconnect()
  console.log('after both left: group', (await admin.describeGroups([GROUP])).groups[0].state)
  console.log('deleteGroups:', await outcome(() => admin.deleteGroups([GROUP]), r => `${r[0].groupId} deleted`))
  console.log('offsets after the delete', await committed())
  console.log('groups left:', list((await admin.listGroups()).groups.map(g => g.groupId)))

  // 7. A compacted topic (VAST lists topic compaction among the Kafka
  // features it supports): an offset gap and a compaction driven through
  // the control plane, read across by a group, and a keyless record refused.
  const COMPACTED = 'kafkajs-prices'
  await admin.createTopics({ topics: [{ topic: COMPACTED, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] })
  const cp = producer()
  await cp.connect()
  const one = (key, value) => cp.send({ topic: COMPACTED, acks: -1, messages: [{ key, value, partition: 0 }] })
  for (const [key, value] of [['apple', '1.00'], ['pear', '2.00'], ['apple', '1.10']]) {
    await one(key, value) // a batch each
  }
  await control(`topics/${COMPACTED}/partitions/0/skip?n=5`, 'POST')
  await one('plum', '3.00')
  await control(`topics/${COMPACTED}/compact`, 'POST')
  const prices = []
  const reader = kafka.consumer({ groupId: 'kafkajs-prices-reader', heartbeatInterval: 100, maxWaitTimeInMs: 200 })
  reader.on(reader.events.CRASH, e => fail(`the reader crashed: ${e.payload.error.name}: ${e.payload.error.message}`))
  await reader.connect()
  await reader.subscribe({ topic: COMPACTED, fromBeginning: true })
  await reader.run({
    autoCommit: false,
    eachMessage: async ({ message }) => { prices.push(`${message.offset} ${message.key} ${message.value}`) }
  })
  await until(() => prices.length >= 3)
  console.log('compacted topic with a gap:', list(prices))
  await reader.commitOffsets([{ topic: COMPACTED, partition: 0, offset: String(Number(prices[prices.length - 1].split(' ')[0]) + 1) }])
  const [lagged] = (await control('groups/kafkajs-prices-reader')).partitions
  console.log('control plane: committed', lagged.committed, 'lag', lagged.lag)
  console.log('keyless record to a compacted topic:', await outcome(() => cp.send({ topic: COMPACTED, acks: -1, messages: [{ value: 'no key', partition: 0 }] })))
  await reader.disconnect()
  await cp.disconnect()
  await admin.deleteTopics({ topics: [COMPACTED] })

  // 8. Delete the topic.
  await admin.deleteTopics({ topics: [TOPIC] })
  console.log('deleted', TOPIC + '; topics left:', list((await admin.listTopics()).filter(t => t.startsWith('kafkajs-'))))
  await admin.disconnect()
  console.log('done')
}

main().then(() => {
  clearTimeout(deadline)
}, e => fail(e.stack || String(e)))
