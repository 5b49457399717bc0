// vastfake's container image for JavaScript tests, over Testcontainers:
// for code that talks to Kafka from outside the test's process (a service
// under test in a container, a Compose stack), or where no vastfake binary
// runs but a container engine does.
//
//   const { startContainer } = require('vastfake/containers')
//   const broker = await startContainer({ topics: ['orders:3'] })
//   // new Kafka({ brokers: [broker.bootstrap] }) ...
//   await broker.injectFault({ api: 'Produce', err: 'NOT_LEADER_OR_FOLLOWER', count: 1 })
//   await broker.stop() // removes the container
//
// The testcontainers npm package (12.x) is an optional peer dependency:
// install it beside vastfake to use this module (npm install --save-dev
// testcontainers). The image is vastfake:latest unless options.image names
// another: build it with go run ./cmd/vastimage -o vastfake.tar in a
// vastfake checkout and load it with docker load or podman load.
'use strict'

// Symbol.asyncDispose, or the name Node.js 18 polyfills it by.
const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')

const { Client, VastfakeError, StartError } = require('./index.js')

/** The image startContainer runs unless options.image names another. */
const DEFAULT_IMAGE = 'vastfake:latest'
/** The image's ports: broker id i listens on KAFKA_PORT + i, the control plane on HTTP_PORT. */
const KAFKA_PORT = 9092
const HTTP_PORT = 8080
// How many of the container's first log lines a start error quotes.
const LOG_HEAD_LINES = 5

// testcontainers loads the peer dependency, saying how to get it.
function testcontainers () {
  try {
    return require('testcontainers')
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && /'testcontainers'/.test(e.message)) {
      throw new VastfakeError('startContainer needs the testcontainers package, an optional peer dependency of ' +
        'vastfake: npm install --save-dev testcontainers@12')
    }
    const major = Number(process.versions.node.split('.')[0])
    const hint = major < 22 ? ` (testcontainers 12 needs Node.js 22 or newer; this is ${process.version})` : ''
    throw new VastfakeError(`startContainer: the testcontainers package does not load${hint}: ${e && e.message}`)
  }
}

/**
 * A vastfake container; a Client of its control plane (every call a Broker
 * has: faults, brokerDown, waits, assertions).
 */
class Container extends Client {
  constructor (started, url, addresses, options) {
    super(url, { token: options.token, timeoutMs: options.timeoutMs, waitTimeoutMs: options.waitTimeoutMs })
    /** The testcontainers StartedTestContainer (its logs(), exec(), ...). */
    this.container = started
    /** "host:port" of broker id 0 as mapped on the host, for any Kafka client. */
    this.bootstrap = addresses[0]
    /** Every broker id's mapped "host:port", in id order: what Metadata hands to clients. */
    this.addresses = addresses
    this.stopped = false
    this._stopTimeoutMs = options.stopTimeoutMs
  }

  /** The container's id. */
  get id () { return this.container.getId() }

  async _checkAlive () {
    if (this.stopped) throw new VastfakeError('the container was stopped')
  }

  /** SIGTERM (SIGKILL after stopTimeoutMs), then remove the container. Safe to call twice. */
  async stop () {
    if (this.stopped) return
    this.stopped = true
    await this.container.stop({ timeout: this._stopTimeoutMs, remove: true, removeVolumes: true })
  }

  /** `await using c = await startContainer()` removes it at the end of the block, as Testcontainers' own do. */
  async [asyncDispose] () {
    await this.stop()
  }
}

/**
 * Start vastfake's image with every broker's Kafka port and the control
 * plane's port mapped to random host ports, tell the broker those mapped
 * addresses (PUT /advertise), so that Metadata sends clients to the host
 * ports, and resolve once GET /healthz answers.
 *
 * Options: image (vastfake:latest), profile ("vast", "kafka" or "audit"),
 * topics (["orders:3"]), rules ({MaxGroups: 10} or ["MaxGroups=10"]),
 * manualClock, brokers (broker ids, each on its own port, 1 to 16), args
 * (more flags of the binary), env (VASTFAKE_* variables), token (the
 * control plane's -http-token), labels (container labels), startTimeoutMs
 * (60 s), stopTimeoutMs (10 s), timeoutMs (each control plane call, 10 s),
 * waitTimeoutMs (each wait, 30 s), and customize (a function given the
 * testcontainers GenericContainer before it starts, for any option of
 * Testcontainers: a network, a log consumer, ...).
 *
 * Rejects with VastfakeError when testcontainers is not installed, and
 * with StartError when the container does not start or exits (a bad flag or
 * variable: the message quotes its log); no container is left behind.
 */
async function startContainer (options = {}) {
  const o = { image: DEFAULT_IMAGE, brokers: 1, startTimeoutMs: 60_000, stopTimeoutMs: 10_000, timeoutMs: 10_000, waitTimeoutMs: 30_000, ...options }
  const { GenericContainer, Wait } = testcontainers()
  const n = o.brokers
  if (!Number.isInteger(n) || n < 1) throw new TypeError(`startContainer: brokers must be an integer from 1, not ${n}`)
  const args = []
  if (o.profile) args.push('-profile', o.profile)
  for (const t of o.topics || []) args.push('-topic', t)
  const rules = Array.isArray(o.rules) ? o.rules : Object.entries(o.rules || {}).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`)
  for (const r of rules) args.push('-rule', r)
  if (o.manualClock) args.push('-manual-clock')
  if (n !== 1) args.push('-brokers', String(n))
  if (o.token) args.push('-http-token', o.token)
  args.push(...(o.args || []))

  const ports = [HTTP_PORT]
  for (let i = 0; i < n; i++) ports.push(KAFKA_PORT + i)
  let gc = new GenericContainer(o.image)
    .withExposedPorts(...ports)
    .withCommand(args)
    .withEnvironment(o.env || {})
    .withLabels(o.labels || {})
    // The image has no shell, so Testcontainers' default wait (which looks
    // inside the container) cannot run; /healthz needs no token.
    .withWaitStrategy(Wait.forHttp('/healthz', HTTP_PORT, { abortOnContainerExit: true }).forStatusCode(200))
    .withStartupTimeout(o.startTimeoutMs)
  // The log's first lines: a bad flag or variable is named there, before
  // the usage, which is longer than what Testcontainers quotes of the end.
  const head = []
  let logEnded
  const ended = new Promise(resolve => { logEnded = resolve })
  gc = gc.withLogConsumer(stream => {
    let rest = ''
    stream.on('data', d => {
      rest += d.toString()
      const lines = rest.split('\n')
      rest = lines.pop()
      for (const l of lines) if (head.length < LOG_HEAD_LINES) head.push(l)
    })
    stream.on('error', logEnded)
    stream.on('end', logEnded)
  })
  if (o.customize) gc = o.customize(gc) || gc
  let started
  // Testcontainers' wait holds no handle that keeps Node running: without
  // this one a test process whose container exits at start could end
  // before the start settles.
  const keepAlive = setTimeout(() => {}, o.startTimeoutMs + 60_000)
  try {
    // On a failed wait Testcontainers stops and removes the container.
    started = await gc.start()
  } catch (e) {
    await Promise.race([ended, new Promise(resolve => setTimeout(resolve, 1000))])
    const log = head.length ? `; its log begins:\n${head.join('\n')}\n` : '; '
    throw new StartError(`the vastfake container (${o.image}) did not start${log}${e.message}`, { stderr: head.join('\n'), cause: e })
  } finally {
    clearTimeout(keepAlive)
  }
  const host = started.getHost()
  const mapped = port => `${host.includes(':') ? `[${host}]` : host}:${started.getMappedPort(port)}`
  const addresses = ports.slice(1).map(mapped)
  const c = new Container(started, `http://${mapped(HTTP_PORT)}/`, addresses, o)
  try {
    await c.setAdvertised(addresses)
  } catch (e) {
    await c.stop().catch(() => {})
    throw new StartError(`the vastfake container: advertise the mapped ports ${addresses.join(', ')}: ${e.message}`, { stderr: '', cause: e })
  }
  return c
}

module.exports = { startContainer, Container, DEFAULT_IMAGE, KAFKA_PORT, HTTP_PORT }
