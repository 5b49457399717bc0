// vastfake/containers: the image started through Testcontainers, with
// kafkajs through the mapped ports: produce, a consumer group, a fault
// through the control plane, three brokers with one down, a bad flag; and
// the error a user without testcontainers gets.
//
// It needs a container engine at DOCKER_HOST (Docker, or podman system
// service: docs/containers.md) and testcontainers 12 (Node.js 22 or newer);
// without them it skips, unless CI is set. The image is VASTFAKE_IMAGE,
// else built here with go run ./cmd/vastimage and loaded into the engine.
// Every container a test starts carries this run's label and is removed
// when the file ends, pass or fail.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { spawn } = require('node:child_process')
const crypto = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const { Kafka, logLevel, Partitioners } = require('kafkajs')
const { ControlPlaneError, StartError } = require('vastfake')

const root = path.join(__dirname, '..', '..')
const runId = crypto.randomBytes(6).toString('hex')
// vastfake.test-run is the label test.sh removes leftovers by, as for the
// Go container tests.
const labels = { 'vastfake.js-test': runId, 'vastfake.test-run': process.env.VASTFAKE_TEST_RUN || '' }

// ---- the container engine, through its Docker API ----

function engineSocket () {
  const host = process.env.DOCKER_HOST || 'unix:///var/run/docker.sock'
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) }
  const u = new URL(host.replace(/^tcp:/, 'http:'))
  return { host: u.hostname, port: u.port }
}

// api sends one request to the engine and resolves to {status, text}.
function api (method, p, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...engineSocket(), method, path: p, timeout: 120_000, headers: body ? { 'Content-Type': 'application/x-tar' } : {} }, res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.on('timeout', () => req.destroy(new Error(`${method} ${p}: no answer`)))
    req.on('error', reject)
    if (body) body.pipe(req)
    else req.end()
  })
}

async function ours () {
  const filters = encodeURIComponent(JSON.stringify({ label: [`vastfake.js-test=${runId}`] }))
  const res = await api('GET', `/containers/json?all=true&filters=${filters}`)
  assert.strictEqual(res.status, 200, res.text)
  return JSON.parse(res.text)
}

function run (cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', d => { out += d })
    child.stderr.on('data', d => { out += d })
    child.once('error', reject)
    child.once('close', status => resolve({ status, out }))
  })
}

// What is missing to run the container tests, or null.
async function missing () {
  const major = Number(process.versions.node.split('.')[0])
  if (major < 22) return `testcontainers 12 needs Node.js 22 or newer (this is ${process.version})`
  try {
    require.resolve('testcontainers')
  } catch {
    return 'the testcontainers package (cd js && npm ci)'
  }
  try {
    const ping = await api('GET', '/_ping')
    if (ping.status !== 200) return `a container engine: GET /_ping at DOCKER_HOST answered ${ping.status}`
  } catch (e) {
    return `a container engine at DOCKER_HOST=${process.env.DOCKER_HOST || '(unset)'}: ${e.message}`
  }
  return null
}

let skip = false
let image = process.env.VASTFAKE_IMAGE
let loadedTag = null
let startContainer

test.before(async () => {
  const why = await missing()
  if (why) {
    if (process.env.CI) throw new Error('the container tests need ' + why)
    process.stderr.write(`skipping the container tests: they need ${why}\n`)
    skip = true
    return
  }
  startContainer = require('vastfake/containers').startContainer
  if (!image) {
    // A tag of this run's own, so that other runs loading vastfake:latest
    // at the same time change nothing here.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-image-'))
    try {
      const tarball = path.join(dir, 'vastfake.tar')
      const built = await run('go', ['run', './cmd/vastimage', '-o', tarball, '-version', 'jstest-' + runId], root)
      assert.strictEqual(built.status, 0, built.out)
      const loaded = await api('POST', '/images/load', fs.createReadStream(tarball))
      assert.strictEqual(loaded.status, 200, loaded.text)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
    image = loadedTag = 'vastfake:jstest-' + runId
  }
})

test.after(async () => {
  if (skip) return
  for (const c of await ours()) await api('DELETE', `/containers/${c.Id}?force=true&v=true`)
  if (loadedTag) await api('DELETE', `/images/${encodeURIComponent(loadedTag)}`) // the tag only: vastfake:latest stays
})

function start (options = {}) {
  return startContainer({ image, labels, ...options })
}

const kafkaFor = (c, clientId) => new Kafka({
  clientId,
  brokers: [c.bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { initialRetryTime: 50, retries: 8 }
})

async function produce (kafka, topic, messages) {
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  try {
    return await producer.send({ topic, messages })
  } finally {
    await producer.disconnect()
  }
}

test('produce, and consume as a group, through the mapped port', async (t) => {
  if (skip) return t.skip('no container engine')
  const c = await start({ topics: ['orders:3'] })
  try {
    assert.match(c.bootstrap, /^[^:]+:\d+$/)
    assert.notStrictEqual(c.bootstrap.split(':')[1], '9092', 'a random host port')
    assert.deepStrictEqual(await c.advertised(), [c.bootstrap], 'Metadata sends clients to the mapped port')
    assert.strictEqual((await c.health()).status, 'ok')

    const kafka = kafkaFor(c, 'billing')
    const messages = Array.from({ length: 30 }, (_, i) => ({ key: `customer-${i % 7}`, value: `order-${i}`, partition: i % 3 }))
    await produce(kafka, 'orders', messages)
    const consumer = kafka.consumer({ groupId: 'billing', heartbeatInterval: 100, maxWaitTimeInMs: 100 })
    const read = []
    try {
      await consumer.connect()
      await consumer.subscribe({ topic: 'orders', fromBeginning: true })
      await consumer.run({ eachMessage: async ({ message }) => { read.push(message.value.toString()) } })
      await c.waitFor('30 orders read', () => read.length >= 30)
      for (const p of [0, 1, 2]) await c.waitCommitted('billing', 'orders', p, 10)
      const g = await c.waitGroupStable('billing', { members: 1 })
      assert.strictEqual(g.members[0].clientId, 'billing')
    } finally {
      await consumer.disconnect()
    }
    assert.deepStrictEqual(read.sort(), messages.map(m => m.value).sort())
    await c.assertNoRefusals()
  } finally {
    await c.stop()
  }
})

test('a fault through the control plane', async (t) => {
  if (skip) return t.skip('no container engine')
  const c = await start({ topics: ['payments:1'] })
  try {
    await c.injectFault({ api: 'Produce', err: 'NOT_LEADER_FOR_PARTITION', count: 2, topic: 'payments' })
    await produce(kafkaFor(c, 'payments'), 'payments', [{ value: 'p-1' }]) // kafkajs retries through both
    const faulted = (await c.requests({ api: 'Produce' })).filter(r => r.fault)
    assert.strictEqual(faulted.length, 2)
    assert.ok(faulted.every(r => r.error === 'NOT_LEADER_FOR_PARTITION'))
    assert.deepStrictEqual(await c.values('payments'), ['p-1'])
  } finally {
    await c.stop()
  }
})

test('three brokers, each on its own mapped port, with one down', async (t) => {
  if (skip) return t.skip('no container engine')
  // One replica per partition: with three, acks=all would wait for
  // broker 1 everywhere until it is fenced, as on Kafka.
  const c = await start({ profile: 'kafka', brokers: 3, topics: ['orders:3'], args: ['-default-replication-factor', '1'] })
  try {
    assert.strictEqual(c.addresses.length, 3)
    assert.strictEqual(new Set(c.addresses).size, 3)
    const kafka = kafkaFor(c, 'several')
    const admin = kafka.admin()
    await admin.connect()
    try {
      const { brokers } = await admin.describeCluster()
      assert.deepStrictEqual(brokers.map(b => `${b.host}:${b.port}`).sort(), [...c.addresses].sort())
    } finally {
      await admin.disconnect()
    }

    await c.brokerDown(1)
    assert.deepStrictEqual((await c.brokers()).map(b => b.down), [false, true, false])
    await produce(kafka, 'orders', [{ value: 'to broker 0', partition: 0 }, { value: 'to broker 2', partition: 2 }])
    // Partition 1's leader, broker 1, is down: its mapped port refuses.
    const impatient = new Kafka({ clientId: 'impatient', brokers: [c.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 1000, retry: { retries: 1, initialRetryTime: 50 } })
    await assert.rejects(produce(impatient, 'orders', [{ value: 'to broker 1 while down', partition: 1 }]))
    assert.strictEqual(await c.endOffset('orders', 1), 0)
    await c.brokerUp(1)
    await produce(kafka, 'orders', [{ value: 'to broker 1', partition: 1 }])
    for (const p of [0, 1, 2]) assert.strictEqual(await c.endOffset('orders', p), 1)
    assert.ok((await c.waitServed('Produce', 1)).length > 0)
  } finally {
    await c.stop()
  }
})

test('a bad flag fails the start with the broker\'s message and leaves no container', async (t) => {
  if (skip) return t.skip('no container engine')
  await assert.rejects(start({ args: ['-no-such-flag'], startTimeoutMs: 30_000 }), e => {
    assert.ok(e instanceof StartError, e.stack)
    assert.match(e.message, /flag provided but not defined: -no-such-flag/)
    return true
  })
  await assert.rejects(start({ env: { VASTFAKE_BROKERS: 'many' }, startTimeoutMs: 30_000 }), e => e instanceof StartError && /VASTFAKE_BROKERS/.test(e.message))
  assert.deepStrictEqual(await ours(), [], 'a container that did not start was removed')
})

test('two containers at once, one with a control plane token', async (t) => {
  if (skip) return t.skip('no container engine')
  const [a, b] = await Promise.all([start({ topics: ['a:1'], token: 's3cret' }), start({ topics: ['b:2'] })])
  try {
    assert.notStrictEqual(a.bootstrap, b.bootstrap)
    assert.deepStrictEqual((await a.topics()).map(x => x.name), ['a'], 'the client sends the token')
    assert.deepStrictEqual((await b.topics()).map(x => x.name), ['b'])
    // Without the token the control plane refuses, advertise included;
    // a bad advertise list is refused and changes nothing.
    const { Client } = require('vastfake')
    const anonymous = new Client(a.url)
    await assert.rejects(anonymous.setAdvertised(['x:1']), e => e instanceof ControlPlaneError && e.status === 401)
    await assert.rejects(a.setAdvertised(['a:1', 'b:2']), e => e instanceof ControlPlaneError && e.status === 400)
    await assert.rejects(a.setAdvertised(['no-port']), e => e instanceof ControlPlaneError && e.status === 400)
    assert.deepStrictEqual(await a.advertised(), [a.bootstrap])
    await produce(kafkaFor(a, 'a'), 'a', [{ value: 'to a' }])
    await produce(kafkaFor(b, 'b'), 'b', [{ value: 'to b', partition: 1 }])
    assert.deepStrictEqual(await a.values('a'), ['to a'])
    assert.deepStrictEqual(await b.values('b', 1), ['to b'])
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
  assert.deepStrictEqual(await ours(), [], 'every container these tests started was removed')
})

test('without the testcontainers package, startContainer says how to get it', async (t) => {
  // The package as a user without testcontainers has it: nothing to find.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-notc-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  for (const f of ['index.js', 'containers.js', 'lib']) fs.cpSync(path.join(__dirname, '..', f), path.join(dir, f), { recursive: true })
  const { startContainer: startIt } = require(path.join(dir, 'containers.js'))
  await assert.rejects(startIt(), e => {
    assert.ok(e instanceof Error && e.name === 'VastfakeError', e.stack)
    assert.match(e.message, /needs the testcontainers package, an optional peer dependency of vastfake: npm install --save-dev testcontainers@12/)
    return true
  })
})
