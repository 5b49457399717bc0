// A vastfake broker in a child process, as the Python package's
// vastfake.broker: started on free ports, stopped with the test or with
// this process however it ends.

'use strict'

// Symbol.asyncDispose, or the name Node.js 18 polyfills it by.
const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')

const { spawn } = require('node:child_process')
const crypto = require('node:crypto')
const readline = require('node:readline')

const { VastfakeError, BinaryNotFoundError, StartError, PortInUseError, BrokerDiedError } = require('./errors.js')
const { findBinary, INSTALL_HINT, UPDATE_HINT } = require('./binary.js')
const { Client, within } = require('./client.js')

// How many of the broker's first and last stderr lines an error quotes: the
// first say why it would not start, the last what it did before it died.
const STDERR_HEAD_LINES = 5
const STDERR_TAIL_LINES = 40

const live = new Set()
let handlersInstalled = false

function installHandlers () {
  if (handlersInstalled) return
  handlersInstalled = true
  // 'exit' handlers run synchronously: a signal is all there is time for.
  process.on('exit', () => {
    for (const b of live) b._signal('SIGTERM')
  })
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    if (process.listenerCount(sig) > 0) continue // someone chose a handler: keep theirs
    const handler = () => {
      for (const b of live) b._signal('SIGTERM')
      // Then die of the signal as the process would have without us.
      process.removeListener(sig, handler)
      process.kill(process.pid, sig)
    }
    process.on(sig, handler)
  }
}

function exitText (code, signal) {
  if (signal) return `signal ${signal}`
  if (code === null || code === undefined) return 'no exit code yet'
  return `code ${code}`
}

/** A vastfake broker in a child process; a Client of its control plane. */
class Broker extends Client {
  constructor (child, options) {
    super('http://unstarted/', { timeoutMs: options.timeoutMs, waitTimeoutMs: options.waitTimeoutMs })
    this.child = child
    this.options = options
    this.bootstrap = ''
    this.stopped = false
    this._head = []
    this._tail = []
    this._dropped = 0
    this._closed = new Promise(resolve => child.once('close', resolve))
  }

  /** The process id of the broker. */
  get pid () { return this.child.pid }

  /** Whether the broker process is running. */
  get running () { return this.child.exitCode === null && this.child.signalCode === null }

  /** The broker's first and last stderr lines (its log), for error messages. */
  stderrTail () {
    const gap = this._dropped ? [`[... ${this._dropped} lines ...]`] : []
    const text = [...this._head, ...gap, ...this._tail].join('\n')
    return text ? text + '\n' : '(nothing)\n'
  }

  _stderrLine (line) {
    if (line.length > 2000) line = line.slice(0, 2000) + '...'
    if (this._head.length < STDERR_HEAD_LINES) {
      this._head.push(line)
      return
    }
    this._tail.push(line)
    if (this._tail.length > STDERR_TAIL_LINES) {
      this._tail.shift()
      this._dropped++
    }
  }

  _signal (sig) {
    try {
      if (this.running) this.child.kill(sig)
    } catch {}
  }

  async _checkAlive () {
    if (this.stopped) throw new VastfakeError('the broker was stopped')
    if (!this.running) {
      // Its stderr may still be arriving: wait (briefly) for the pipes to close.
      await within(this._closed, 2000)
      throw new BrokerDiedError(`the vastfake broker (pid ${this.pid}) died: it exited with ` +
        `${exitText(this.child.exitCode, this.child.signalCode)}; stderr:\n${this.stderrTail()}`,
      { stderr: this.stderrTail(), exitCode: this.child.exitCode, signal: this.child.signalCode })
    }
  }

  /**
   * Stop the broker: SIGTERM, then SIGKILL after stopTimeoutMs. Safe to call
   * twice; resolves to the exit code (null when a signal ended it).
   */
  async stop () {
    live.delete(this)
    this.stopped = true
    const timeout = this.options.stopTimeoutMs
    const exited = () => !this.running
    if (!exited()) {
      this.child.kill('SIGTERM')
      if (await within(this._closed, timeout, 'timeout') === 'timeout' && !exited()) {
        this._signal('SIGKILL')
      }
    }
    this.child.stdin.destroy()
    await within(this._closed, timeout)
    return this.child.exitCode
  }

  /** `await using broker = await startBroker()` stops it at the end of the block. */
  async [asyncDispose] () {
    await this.stop()
  }
}

/**
 * Start a vastfake broker on free ports and resolve once it listens.
 * Options: profile ("vast", "kafka" or "audit"), kafkaVersion (the Kafka
 * release the kafka and audit profiles follow, "4.0" to "4.3", the default;
 * -kafka-version), topics (["orders:3"]), rules
 * ({MaxGroups: 10} or ["MaxGroups=10"]), manualClock, brokers (broker ids,
 * each on its own address, 1 to 16; bootstrap is the first), args (more flags),
 * listen and http (addresses, free ports on 127.0.0.1 by default), binary,
 * env, startTimeoutMs (30 s), stopTimeoutMs (10 s), timeoutMs (each control
 * plane call, 10 s), waitTimeoutMs (each wait, 30 s).
 *
 * Rejects with BinaryNotFoundError, PortInUseError, or StartError quoting
 * the binary's stderr. The broker is stopped when this process exits, on
 * SIGINT, SIGTERM and SIGHUP, and, since it runs with -exit-on-stdin-close,
 * when this process dies in any other way.
 */
async function startBroker (options = {}) {
  const o = {
    listen: '127.0.0.1:0',
    http: '127.0.0.1:0',
    startTimeoutMs: 30_000,
    stopTimeoutMs: 10_000,
    timeoutMs: 10_000,
    waitTimeoutMs: 30_000,
    ...options
  }
  const binary = o.binary || await findBinary()
  let token = crypto.randomBytes(18).toString('base64url')
  const args = ['-http-token', token, '-listen', o.listen, '-http', o.http, '-exit-on-stdin-close']
  if (o.profile) args.push('-profile', o.profile)
  if (o.kafkaVersion) args.push('-kafka-version', o.kafkaVersion)
  for (const t of o.topics || []) args.push('-topic', t)
  const rules = Array.isArray(o.rules) ? o.rules : Object.entries(o.rules || {}).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : v}`)
  for (const r of rules) args.push('-rule', r)
  if (o.manualClock) args.push('-manual-clock')
  if (o.brokers !== undefined && o.brokers !== 1) args.push('-brokers', String(o.brokers))
  const extra = o.args || []
  args.push(...extra)
  // A -http-token in args wins, as the flag package decides: read it back.
  extra.forEach((a, i) => {
    const name = a.replace(/^--?/, '')
    if (name === 'http-token' && i + 1 < extra.length) token = extra[i + 1]
    else if (name.startsWith('http-token=')) token = name.slice('http-token='.length)
  })

  installHandlers()
  const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...(o.env || {}) } })
  const broker = new Broker(child, o)
  broker.token = token
  live.add(broker)
  child.stdin.on('error', () => {}) // EPIPE once the broker is gone
  readline.createInterface({ input: child.stderr }).on('line', line => broker._stderrLine(line))
  const out = readline.createInterface({ input: child.stdout })

  const pending = []
  let waiter = null
  let ended = false
  const wake = () => { if (waiter) { const w = waiter; waiter = null; w() } }
  out.on('line', line => { pending.push(line); wake() })
  let spawnError = null
  child.once('error', e => { spawnError = e; ended = true; wake() })
  broker._closed.then(() => { ended = true; wake() })

  let timer
  const deadline = new Promise(resolve => { timer = setTimeout(resolve, o.startTimeoutMs, 'timeout') })
  const next = async prefix => {
    while (!pending.length && !ended) {
      const r = await Promise.race([new Promise(resolve => { waiter = resolve }), deadline])
      if (r === 'timeout') {
        throw new StartError(`vastfake printed no "${prefix.trim()}" line within ${o.startTimeoutMs} ms; stderr:\n${broker.stderrTail()}`, { stderr: broker.stderrTail() })
      }
    }
    if (!pending.length) {
      if (spawnError) {
        throw new BinaryNotFoundError(`cannot run ${binary}: ${spawnError.message}; ${INSTALL_HINT}`)
      }
      const tail = broker.stderrTail()
      const props = { stderr: tail, exitCode: child.exitCode, signal: child.signalCode }
      if (/address already in use|only one usage of each socket address/i.test(tail)) {
        throw new PortInUseError(`vastfake could not listen: the port is taken (listen=${o.listen}, http=${o.http}); stderr:\n${tail}`, props)
      }
      let hint = ''
      if (tail.includes('flag provided but not defined: -exit-on-stdin-close')) {
        hint = `\nthis vastfake binary (${binary}) is older than the vastfake package; ${UPDATE_HINT}`
      }
      throw new StartError(`vastfake exited with ${exitText(child.exitCode, child.signalCode)} before it listened; stderr:\n${tail}${hint}`, props)
    }
    const line = pending.shift()
    if (!line.startsWith(prefix)) {
      throw new StartError(`vastfake printed ${JSON.stringify(line)} where "${prefix}..." was expected; stderr:\n${broker.stderrTail()}`, { stderr: broker.stderrTail() })
    }
    return line.slice(prefix.length).trim()
  }
  try {
    broker.bootstrap = await next('listening on ')
    broker.url = await next('control plane on ')
  } catch (e) {
    live.delete(broker)
    broker.stopped = true
    broker._signal('SIGKILL')
    child.stdin.destroy()
    if (!spawnError) await within(broker._closed, o.stopTimeoutMs)
    throw e
  } finally {
    clearTimeout(timer)
  }
  // A broker the test forgot to stop must not keep the test process alive:
  // nothing of it holds the event loop, and the exit handler stops it.
  child.unref()
  for (const s of [child.stdin, child.stdout, child.stderr]) {
    if (s && typeof s.unref === 'function') s.unref()
  }
  return broker
}

module.exports = { Broker, startBroker }
