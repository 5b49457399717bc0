// vastfake for JavaScript tests: start the vastfake binary (an in-memory
// Kafka broker that behaves like VAST Event Broker 5.5) on free ports, and
// drive it through its HTTP control plane with typed calls, assertions and
// waits. No runtime dependencies; Node.js 18 or newer; works from node:test,
// Jest and Vitest.
//
//   const { startBroker } = require('vastfake')
//   const broker = await startBroker({ topics: ['orders:3'] })
//   // new Kafka({ brokers: [broker.bootstrap] }) ...
//   await broker.waitCommitted('billing', 'orders', 0, 6)
//   await broker.assertNoRefusals()
//   await broker.stop()
//
// The binary is options.binary, else VASTFAKE_BIN, else the one the
// platform package npm installed with this one carries (@vastfake/linux-x64
// and so on, optional dependencies), else vastfake on PATH, else one built
// with `go build` when the working directory (or this package) is inside a
// vastfake checkout (or VASTFAKE_SRC names one); the build runs beside the
// event loop, says so on stderr and is cached on disk for later processes.
// Every call has a timeout and every wait a deadline: nothing hangs.

'use strict'

const { spawn } = require('node:child_process')
const crypto = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const os = require('node:os')
const path = require('node:path')
const readline = require('node:readline')

const MODULE_LINE = 'module github.com/vastfake/vastfake'
const INSTALL_HINT = 'install vastfake with its optional dependencies (npm then installs the @vastfake package that ' +
  'carries the binary for this platform), or build it in a clone of the vastfake repository with ' +
  '`go install ./cmd/vastfake` (then it is $(go env GOPATH)/bin/vastfake; put that on PATH) or ' +
  '`go build -o /some/dir/vastfake ./cmd/vastfake` and set VASTFAKE_BIN to it, or set VASTFAKE_SRC to the clone ' +
  '(with go on PATH) to have it built and cached; `go install github.com/vastfake/vastfake/cmd/vastfake@latest` ' +
  'works once the module is published'
// What to run in a checkout to replace a binary older than this package.
const UPDATE_HINT = 'rebuild it from an up-to-date vastfake clone: go install ./cmd/vastfake (or, once the module ' +
  'is published, go install github.com/vastfake/vastfake/cmd/vastfake@latest)'
// How many built binaries the cache keeps (one per state of a source tree),
// the most recently used first.
const CACHE_KEEP = 5
// How many of the broker's first and last stderr lines an error quotes: the
// first say why it would not start, the last what it did before it died.
const STDERR_HEAD_LINES = 5
const STDERR_TAIL_LINES = 40

// ---- errors ----

/** Anything this package throws. */
class VastfakeError extends Error {
  constructor (message, props) {
    super(message)
    this.name = this.constructor.name
    Object.assign(this, props)
  }
}
/** No binary was found and none could be built; the message says how to get one. */
class BinaryNotFoundError extends VastfakeError {}
/** The binary did not start; `stderr` is the head and tail of its stderr. */
class StartError extends VastfakeError {}
/** The address the broker or its control plane was to listen on is taken. */
class PortInUseError extends StartError {}
/** The broker exited while in use; `stderr` is the head and tail of its stderr. */
class BrokerDiedError extends VastfakeError {}
/** The control plane answered an error (`status`, `error`) or nothing. */
class ControlPlaneError extends VastfakeError {}
/** A wait's condition did not hold before its deadline; `code` is 'ERR_ASSERTION'. */
class WaitTimeout extends VastfakeError {
  constructor (message) {
    super(message, { code: 'ERR_ASSERTION' })
  }
}
/** A failed assertion; `code` is 'ERR_ASSERTION' as for node:assert. */
class AssertionError extends VastfakeError {
  constructor (message) {
    super(message, { code: 'ERR_ASSERTION' })
  }
}

// ---- finding the binary ----

function checkout (start) {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    try {
      const first = fs.readFileSync(path.join(dir, 'go.mod'), 'utf8').split('\n')[0].trim()
      if (first === MODULE_LINE) return dir
    } catch {}
    if (path.dirname(dir) === dir) return null
  }
}

function executable (file) {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

// which finds name on PATH, passing over this package's own command
// (cli.js, which npm links as node_modules/.bin/vastfake): it runs what
// findBinary finds, so finding it would run itself.
function which (name) {
  const exts = process.platform === 'win32' ? ['.exe', ''] : ['']
  const self = path.join(__dirname, 'cli.js')
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (!dir) continue
    for (const ext of exts) {
      const file = path.join(dir, name + ext)
      if (!executable(file)) continue
      try {
        if (fs.realpathSync(file) === fs.realpathSync(self)) continue
      } catch {}
      return file
    }
  }
  return null
}

const built = new Map() // checkout -> promise of the binary built from it by this process

// The platform packages, one per Node platform and arch, that carry the
// binary; the main package lists them all as optional dependencies and npm
// installs the one whose os and cpu fields match.
const PLATFORM_PACKAGES = ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64']

/**
 * The binary the platform package (@vastfake/linux-x64 and so on) carries,
 * or null when none is installed: an unlisted platform, an install without
 * optional dependencies, or a checkout of the sources.
 */
function carriedBinary () {
  const name = `${process.platform}-${process.arch}`
  if (!PLATFORM_PACKAGES.includes(name)) return null
  let file
  try {
    file = require.resolve(`@vastfake/${name}/bin/vastfake${process.platform === 'win32' ? '.exe' : ''}`)
  } catch {
    return null
  }
  if (!executable(file)) {
    // npm keeps the tarball's mode 0755; a tool that drops it leaves a file
    // this process may still make executable.
    try {
      fs.chmodSync(file, 0o755)
    } catch {}
    if (!executable(file)) throw new BinaryNotFoundError(`${file} (the binary @vastfake/${name} carries) is not executable: chmod +x it`)
  }
  return file
}

// run spawns cmd and resolves to {status, signal, stdout, stderr, error}
// when it ends, killing it after timeoutMs: what spawnSync answers,
// without blocking the event loop while cmd runs.
function run (cmd, args, { cwd, timeoutMs } = {}) {
  return new Promise(resolve => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    const err = []
    let error = null
    child.stdout.on('data', d => out.push(d))
    child.stderr.on('data', d => err.push(d))
    const timer = timeoutMs && setTimeout(() => {
      error = new Error(`it took over ${timeoutMs} ms`)
      child.kill('SIGKILL')
    }, timeoutMs)
    child.once('error', e => { error = error || e })
    child.once('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, error, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
  })
}

/**
 * The directory built binaries are cached in: VASTFAKE_CACHE_DIR, else
 * vastfake in the user's cache directory (XDG_CACHE_HOME or ~/.cache,
 * ~/Library/Caches on macOS, LOCALAPPDATA on Windows).
 */
function cacheDir () {
  if (process.env.VASTFAKE_CACHE_DIR) return path.resolve(process.env.VASTFAKE_CACHE_DIR)
  let base
  if (process.platform === 'win32') base = process.env.LOCALAPPDATA
  else if (process.platform === 'darwin') base = path.join(os.homedir(), 'Library', 'Caches')
  else base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  return path.join(base || os.tmpdir(), 'vastfake')
}

// buildFiles lists, sorted, the files of the checkout at root that go build
// ./cmd/vastfake can read: go.mod, go.sum and every file but tests in a
// directory with Go code (embedded files sit next to it), skipping what the
// go command skips (testdata, names starting with . or _) and nested modules.
function buildFiles (root) {
  const files = []
  const walk = rel => {
    let entries
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true })
    } catch {
      return
    }
    const names = entries.filter(e => e.isFile()).map(e => e.name)
    if (rel === '') files.push(...names.filter(n => n === 'go.mod' || n === 'go.sum'))
    if (names.some(n => n.endsWith('.go') && !n.endsWith('_test.go'))) {
      for (const n of names) {
        if (!n.endsWith('_test.go') && !(rel === '' && (n === 'go.mod' || n === 'go.sum'))) files.push(rel ? rel + '/' + n : n)
      }
    }
    for (const e of entries) {
      if (!e.isDirectory() || /^[._]/.test(e.name) || e.name === 'testdata' || e.name === 'node_modules') continue
      const sub = rel ? rel + '/' + e.name : e.name
      if (!fs.existsSync(path.join(root, sub, 'go.mod'))) walk(sub)
    }
  }
  walk('')
  return files.sort()
}

// sourceKey names the binary go would build from the checkout at src: a
// hash of the go version, the environment that changes what it builds, and
// the path, size and contents of every file buildFiles lists. The Python
// package computes the same key, so both share the cache.
async function sourceKey (src, go) {
  const h = crypto.createHash('sha256')
  const v = await run(go, ['version'], { timeoutMs: 60_000 })
  h.update((v.stdout || '').trim() + '\0')
  for (const name of ['GOOS', 'GOARCH', 'GOFLAGS', 'CGO_ENABLED', 'GOEXPERIMENT']) h.update((process.env[name] || '') + '\0')
  for (const rel of buildFiles(src)) {
    const data = await fs.promises.readFile(path.join(src, ...rel.split('/')))
    h.update(`${rel}\0${data.length}\0`)
    h.update(data)
  }
  return h.digest('hex').slice(0, 20)
}

// pruneCache removes all but the CACHE_KEEP most recently used binaries,
// never keep, and the temporary files of builds that died over an hour ago.
function pruneCache (dir, keep) {
  let names
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  const bins = []
  for (const name of names) {
    try {
      const file = path.join(dir, name)
      const st = fs.statSync(file)
      if (name.startsWith('.vastfake-') && Date.now() - st.mtimeMs > 3600_000) fs.rmSync(file, { force: true })
      else if (name.startsWith('vastfake-') && file !== keep) bins.push({ file, mtime: st.mtimeMs })
    } catch {}
  }
  bins.sort((a, b) => b.mtime - a.mtime)
  for (const { file } of bins.slice(CACHE_KEEP - 1)) {
    try {
      fs.rmSync(file, { force: true })
    } catch {}
  }
}

// buildBinary builds ./cmd/vastfake in src into the cache, or resolves to
// the cached build of the same sources. go runs in a child process (spawn,
// not spawnSync), so timers, servers and other tests go on while it builds. Concurrent builders (node --test runs each file in a
// process of its own) each build to a file of their own and rename it into
// place, so a reader sees no binary or a whole one.
async function buildBinary (src, go, buildTimeoutMs) {
  const exe = process.platform === 'win32' ? '.exe' : ''
  const key = await sourceKey(src, go)
  let dir = cacheDir()
  try {
    fs.mkdirSync(dir, { recursive: true })
  } catch {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-')) // no cache: a directory for this process
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
  }
  const out = path.join(dir, `vastfake-${key}${exe}`)
  if (executable(out)) {
    try {
      const now = new Date()
      fs.utimesSync(out, now, now) // used: the last to go when the cache is pruned
    } catch {}
    return out
  }
  const tmp = path.join(dir, `.vastfake-${key}-${process.pid}-${crypto.randomBytes(4).toString('hex')}${exe}`)
  process.stderr.write(`vastfake: building the broker from ${src} (go build ./cmd/vastfake); it is cached in ${dir} ` +
    'until the sources change\n')
  const done = await run(go, ['build', '-o', tmp, './cmd/vastfake'], { cwd: src, timeoutMs: buildTimeoutMs })
  if (done.error || done.status !== 0) {
    fs.rmSync(tmp, { force: true })
    if (done.error) throw new BinaryNotFoundError(`go build ./cmd/vastfake in ${src}: ${done.error.message}`)
    throw new BinaryNotFoundError(`go build ./cmd/vastfake in ${src} failed:\n${done.stderr.slice(-4000)}`)
  }
  fs.renameSync(tmp, out)
  pruneCache(dir, out)
  return out
}

/**
 * Resolves to the path of a vastfake binary: VASTFAKE_BIN; else the one the
 * installed platform package carries; else vastfake on PATH; else one built
 * with `go build` from VASTFAKE_SRC or from the vastfake checkout the
 * working directory or this package is in, without blocking the event loop.
 * Rejects with BinaryNotFoundError saying how to get one otherwise.
 */
async function findBinary ({ buildTimeoutMs = 300_000 } = {}) {
  const env = process.env.VASTFAKE_BIN
  if (env) {
    if (!executable(env)) throw new BinaryNotFoundError(`VASTFAKE_BIN=${env} is not an executable file; ${INSTALL_HINT}`)
    return env
  }
  const onPath = carriedBinary() || which('vastfake')
  if (onPath) return onPath
  let src
  if (process.env.VASTFAKE_SRC) {
    src = path.resolve(process.env.VASTFAKE_SRC)
    if (checkout(src) !== src) {
      throw new BinaryNotFoundError(`VASTFAKE_SRC=${src} is not a vastfake checkout (no go.mod starting "${MODULE_LINE}")`)
    }
  } else {
    src = checkout(process.cwd()) || checkout(__dirname)
  }
  if (!src) {
    throw new BinaryNotFoundError('no vastfake binary: VASTFAKE_BIN is not set, vastfake is not on PATH, and this ' +
      'is not a vastfake checkout; ' + INSTALL_HINT)
  }
  const go = which('go')
  if (!go) throw new BinaryNotFoundError(`no vastfake binary: ${src} is a vastfake checkout but go is not on PATH to build it; ${INSTALL_HINT}`)
  // One build per checkout however many brokers start at once; a failed
  // one is tried again by the next call.
  if (!built.has(src)) built.set(src, buildBinary(src, go, buildTimeoutMs).catch(e => { built.delete(src); throw e }))
  const out = await built.get(src)
  if (executable(out)) return out
  built.delete(src) // removed from the cache since: build it again
  return findBinary({ buildTimeoutMs })
}

// ---- durations ----

/**
 * A Go duration the control plane parses: a string is taken as one ("30s"),
 * a number is milliseconds.
 */
function goDuration (d) {
  if (typeof d === 'string') return d
  if (typeof d !== 'number' || !Number.isFinite(d) || d < 0) {
    throw new TypeError(`duration ${d}: want a Go duration string such as "30s" or milliseconds >= 0`)
  }
  return `${Math.round(d * 1e6)}ns`
}

// ---- the control plane client ----

const sleep = ms => new Promise(resolve => { setTimeout(resolve, ms) })

// within resolves to what promise resolves to, or to onTimeout after ms,
// and clears its timer either way, so that no timer outlives the call and
// holds the test process open.
function within (promise, ms, onTimeout) {
  let timer
  return Promise.race([
    promise,
    new Promise(resolve => { timer = setTimeout(resolve, ms, onTimeout) })
  ]).finally(() => clearTimeout(timer))
}

function lines (items) {
  const shown = items.slice(0, 20).map(x => '  ' + describe(x))
  if (items.length > 20) shown.push(`  ... and ${items.length - 20} more`)
  return shown.join('\n')
}

function describe (x) {
  if (x && x.api !== undefined) { // a request
    let s = `${x.api} v${x.version} from client ${JSON.stringify(x.clientId)}`
    if (x.error) s += `: ${x.error}`
    if (x.rule) s += ` by VAST rule ${x.rule}`
    if (x.message) s += ` (${x.message})`
    if (x.denied) s += ` denied: ${x.denied}`
    if (x.fault) s += ' [injected fault]'
    if (x.closed) s += ' [connection closed]'
    return s
  }
  if (x && x.kind !== undefined) { // a finding
    let who = x.clientId || '?'
    if (x.clientSoftware) who += ` (${x.clientSoftware} ${x.clientVersion || ''})`.replace(' )', ')')
    const where = [x.topic && 'topic ' + x.topic, x.group && 'group ' + x.group].filter(Boolean).join(', ')
    let s = `${x.rule} [${x.kind}] from ${who}`
    if (where) s += ' on ' + where
    s += `, ${x.count} time${x.count === 1 ? '' : 's'}`
    if (x.detail) s += ': ' + x.detail
    if (x.advice) s += ' -- ' + x.advice
    return s
  }
  return JSON.stringify(x)
}

function bytes (text, b64) {
  if (b64) return Buffer.from(b64, 'base64')
  if (text === null || text === undefined) return null
  return Buffer.from(text, 'utf8')
}

function record (r) {
  return {
    offset: r.offset,
    timestampMs: r.timestampMs,
    timestamp: r.timestamp,
    key: bytes(r.key, r.keyBase64),
    value: bytes(r.value, r.valueBase64),
    headers: (r.headers || []).map(h => ({ key: h.key, value: bytes(h.value, h.valueBase64) })),
    logAppendTime: !!r.logAppendTime,
    compressed: !!r.compressed,
    producerId: r.producerId || 0,
    marker: r.marker || '',
    transaction: r.transaction || '',
    raw: r
  }
}

/**
 * The control plane of a running vastfake (started with -http) at url,
 * e.g. "http://127.0.0.1:8080/". startBroker returns a Broker, which is a
 * Client of the broker it started.
 */
class Client {
  constructor (url, { token, timeoutMs = 10_000, waitTimeoutMs = 30_000 } = {}) {
    this.url = url.endsWith('/') ? url : url + '/'
    this.token = token
    this.timeoutMs = timeoutMs
    this.waitTimeoutMs = waitTimeoutMs
  }

  /** Throws if the broker is known to be gone; Broker overrides it. */
  async _checkAlive () {}

  // _call sends one request and resolves to {body, headers}. An error
  // status throws ControlPlaneError with the control plane's message,
  // followed by explain[status] when given; so does no answer within
  // timeoutMs. Each request has a connection of its own (agent: false sends
  // Connection: close), closed with the answer, so that the client never
  // holds one of the control plane's connections between calls.
  async _call (method, p, query, body, explain) {
    await this._checkAlive()
    const u = new URL(p.replace(/^\//, ''), this.url)
    for (const [k, v] of Object.entries(query || {})) {
      if (v !== undefined && v !== null) u.searchParams.set(k, String(v))
    }
    const what = `${method} /${p.replace(/^\//, '')}`
    const headers = { Accept: 'application/json' }
    let data
    if (body !== undefined) {
      data = JSON.stringify(body)
      headers['Content-Type'] = 'application/json'
      headers['Content-Length'] = Buffer.byteLength(data)
    }
    if (this.token) headers.Authorization = 'Bearer ' + this.token
    let res
    try {
      res = await new Promise((resolve, reject) => {
        const req = http.request(u, { method, headers, agent: false, timeout: this.timeoutMs }, resp => {
          const chunks = []
          resp.on('data', c => chunks.push(c))
          resp.on('end', () => resolve({ status: resp.statusCode, headers: resp.headers, text: Buffer.concat(chunks).toString('utf8') }))
          resp.on('error', reject)
        })
        req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)))
        req.on('error', reject)
        req.end(data)
      })
    } catch (e) {
      await this._checkAlive() // a dead broker explains itself better
      throw new ControlPlaneError(`${what}: no answer from the control plane at ${this.url}: ${e.message}`, { status: null, error: '' })
    }
    let json
    try {
      json = res.text ? JSON.parse(res.text) : null
    } catch {
      json = undefined
    }
    if (res.status >= 400) {
      const msg = (json && json.error) || res.text.trim()
      if (res.status === 404 && msg === 'Not Found') {
        throw new ControlPlaneError(`${what}: 404, this vastfake binary has no such endpoint; it is older than the ` +
          `vastfake package (${UPDATE_HINT})`, { status: 404, error: msg })
      }
      const hint = explain && explain[res.status]
      throw new ControlPlaneError(`${what}: ${res.status} ${msg}${hint ? '; ' + hint : ''}`, { status: res.status, error: msg })
    }
    if (json === undefined) throw new ControlPlaneError(`${what}: the answer is not JSON: ${res.text.slice(0, 200)}`, { status: res.status, error: '' })
    return { body: json, headers: res.headers }
  }

  async _get (p, query) { return (await this._call('GET', p, query)).body }
  async _post (p, query, body) { return (await this._call('POST', p, query, body)).body }

  // ---- inspection ----

  /** GET /healthz: {status, bootstrap, kafkaVersion}. */
  health () { return this._get('healthz') }
  /** GET /rules: the VAST rules in force, by rules.Rules field name. */
  rules () { return this._get('rules') }
  /** GET /clock: {now, manual}. */
  clock () { return this._get('clock') }
  /** GET /topics: every topic with its partitions' offsets. */
  topics () { return this._get('topics') }
  /** GET /topics/{name}; ControlPlaneError (status 404) if there is none. */
  topic (name) { return this._get('topics/' + encodeURIComponent(name)) }

  /** The partition's high watermark: the offset the next record gets. */
  async endOffset (topic, partition = 0) {
    const t = await this.topic(topic)
    const p = t.partitions.find(x => x.partition === partition)
    if (!p) throw new ControlPlaneError(`topic ${topic} has no partition ${partition} (it has ${t.partitions.length})`, { status: 404, error: '' })
    return p.highWatermark
  }

  /**
   * One page of records: up to limit from offset, and the offset of the
   * next page (the Next-Offset header; null when the partition has no more).
   */
  async recordsPage (topic, partition = 0, { offset = 0, limit = 100 } = {}) {
    const { body, headers } = await this._call('GET', `topics/${encodeURIComponent(topic)}/partitions/${partition}/records`, { offset, limit })
    const records = body.map(record)
    const next = headers['next-offset']
    if (next !== undefined && next !== '') return { records, nextOffset: Number(next) }
    // A binary that does not send Next-Offset: a full page may have more.
    if (records.length >= limit) return { records, nextOffset: records[records.length - 1].offset + 1 }
    return { records, nextOffset: null }
  }

  /** Every record of the partition from offset on, a page at a time. */
  async * iterRecords (topic, partition = 0, { offset = 0, pageSize = 100 } = {}) {
    let next = offset
    while (next !== null) {
      const page = await this.recordsPage(topic, partition, { offset: next, limit: pageSize })
      yield * page.records
      if (page.nextOffset !== null && page.nextOffset <= next) break // no progress: never loop on a broken answer
      next = page.nextOffset
    }
  }

  /** Every record of the partition from offset on (keys and values as Buffers). */
  async records (topic, partition = 0, { offset = 0 } = {}) {
    const out = []
    for await (const r of this.iterRecords(topic, partition, { offset })) out.push(r)
    return out
  }

  /** The values of every record of the partition as UTF-8 strings (null for a null value). */
  async values (topic, partition = 0) {
    return (await this.records(topic, partition)).map(r => r.value === null ? null : r.value.toString('utf8'))
  }

  /** GET /groups: every group with members, assignments and lag. */
  groups () { return this._get('groups') }
  /** GET /groups/{name}; ControlPlaneError (status 404) if there is none. */
  group (name) { return this._get('groups/' + encodeURIComponent(name)) }

  /** The group, or null when the broker has no such group. */
  async findGroup (name) {
    try {
      return await this.group(name)
    } catch (e) {
      if (e instanceof ControlPlaneError && e.status === 404 && e.error.startsWith('no group')) return null
      throw e
    }
  }

  /** The committed offset (the next to read), null if none. */
  async committed (group, topic, partition = 0) {
    const g = await this.findGroup(group)
    const p = g && g.partitions.find(x => x.topic === topic && x.partition === partition)
    return p ? p.committed : null
  }

  /** The high watermark minus the committed offset, null if nothing is committed. */
  async lag (group, topic, partition = 0) {
    const g = await this.findGroup(group)
    const p = g && g.partitions.find(x => x.topic === topic && x.partition === partition)
    return p ? p.lag : null
  }

  /** GET /transactions: every transactional id (kafka and audit profiles), or only those with a transaction open. */
  transactions ({ openOnly } = {}) { return this._get('transactions', { state: openOnly ? 'open' : undefined }) }
  /** GET /transactions/{id}; ControlPlaneError (status 404) if the broker does not know the id. */
  transaction (transactionalId) { return this._get('transactions/' + encodeURIComponent(transactionalId)) }

  /** GET /rebalances: finished rebalances (of group), oldest first. */
  rebalances ({ group } = {}) { return this._get('rebalances', { group }) }
  /** GET /requests: the request log, oldest first, filtered by rule, api, and to the newest limit. */
  requests ({ rule, api, limit, broker } = {}) { return this._get('requests', { rule, api, limit, broker }) }

  /** The requests a VAST rule refused (that rule only, when given). */
  async refusals (rule) {
    if (rule) return this.requests({ rule })
    return (await this.requests()).filter(r => r.rule)
  }

  /** GET /audit: client behaviour VAST would refuse or treat differently, with advice. */
  async findings () { return (await this._audit()).findings }
  async _audit () {
    const body = (await this._get('audit')) || {}
    return { findings: body.findings || [], dropped: body.dropped || 0 }
  }
  /** GET /audit: the errors answered without a VAST rule, by API, client and error, with counts and advice. */
  async errors () { return ((await this._get('audit')) || {}).errors || [] }
  /** GET /audit: how many consumer groups each client created and how many are empty now. */
  async groupsCreated () { return ((await this._get('audit')) || {}).groups || [] }
  /** DELETE /audit: forget every finding, e.g. between the phases of a test. */
  async clearFindings () { await this._call('DELETE', 'audit') }
  /** GET /live.json: topics, groups and the latest rebalances at once. */
  live () { return this._get('live.json') }

  // ---- control ----

  /** DELETE /requests: empty the request log. */
  async clearRequests () { await this._call('DELETE', 'requests') }

  /**
   * POST /faults: answer requests of api ("Produce" or its key) with the
   * Kafka error err ("NOT_LEADER_FOR_PARTITION" or its code), count times
   * (0: until cleared), for a topic (every partition unless partition or
   * partitions are given), a group, or every request. With dropAnswer (and
   * no err) the broker handles the request, then closes the connection
   * instead of answering. Returns the fault as the broker understood it.
   */
  async injectFault ({ api, err, count = 0, topic, partition, partitions, group, broker, dropAnswer = false }) {
    if (err === undefined && !dropAnswer) throw new TypeError('injectFault: give err, or dropAnswer: true')
    const body = { api, count }
    if (err !== undefined) body.err = err
    if (dropAnswer) body.dropAnswer = true
    if (topic !== undefined) body.topic = topic
    if (partition !== undefined) body.partition = partition
    if (broker !== undefined) body.broker = broker
    if (partitions !== undefined) body.partitions = partitions
    if (group !== undefined) body.group = group
    return this._post('faults', undefined, body)
  }

  /** Fail the next n requests of api with err; scope {topic, partition, partitions, group}. */
  failNext (api, err, n = 1, scope = {}) {
    if (!(n >= 1)) throw new RangeError('failNext: n must be at least 1')
    return this.injectFault({ api, err, count: n, ...scope })
  }

  /** DELETE /faults: remove every fault and added latency. */
  async clearFaults () { await this._call('DELETE', 'faults') }
  /** POST /latency: delay requests of api by d (ms, or "200ms"), on one broker id if given; 0 removes it. Returns it as set. */
  async latency (api, d, broker) {
    const query = { api, d: goDuration(d) }
    if (broker !== undefined) query.broker = broker
    return (await this._post('latency', query)).latency
  }

  /** POST /drop-connections: close every client connection, or those of one broker id. */
  async dropConnections (broker) { await this._post('drop-connections', broker === undefined ? undefined : { broker }) }
  /** POST /failover: committed offsets vanish, as in a VAST failover. */
  async failover () { await this._post('failover') }
  /** POST /restart: the listener and connections restart, data stays. */
  async restart () { await this._post('restart') }
  /** GET /advertise: the "host:port" Metadata hands to clients for each broker id, in order. */
  async advertised () { return (await this._get('advertise')).addresses }
  /**
   * PUT /advertise: Metadata hands these addresses to clients from the next
   * request on, one per broker id in order; open connections stay. For a
   * broker whose reachable address is known only after it starts (a
   * container's mapped ports). Rejects with ControlPlaneError (400, changing
   * nothing) for a list of the wrong length or an address without a port.
   */
  async setAdvertised (addresses) { return (await this._call('PUT', 'advertise', undefined, { addresses })).body.addresses }
  /** GET /brokers: each broker id's id, addr and down. */
  async brokers () { return (await this._get('brokers')).brokers }
  /**
   * POST /brokers/{id}/down: that address refuses connections and drops the
   * ones it has while the other brokers serve. Rejects with ControlPlaneError
   * (404 for no such broker, 409 if it is down already).
   */
  async brokerDown (brokerId) { await this._post(`brokers/${brokerId}/down`) }
  /**
   * POST /brokers/{id}/failover: a VAST virtual-IP failover of that address:
   * its connections reset, it refuses connections for blackout (ms or "5s")
   * on the broker's clock, then serves again; ControlPlaneError 404 or 409.
   */
  async failOverAddress (brokerId, blackout = 0) { await this._post(`brokers/${brokerId}/failover`, { blackout: goDuration(blackout) }) }
  /** POST /topics/{name}/partitions/{p}/leader: the leader moves to brokerId, leader epoch + 1; returns {leader, leaderEpoch}. */
  async moveLeader (topic, partition, brokerId) {
    return this._post(`topics/${encodeURIComponent(topic)}/partitions/${partition}/leader`, { broker: brokerId })
  }

  /** POST /groups/{name}/coordinator: the group's coordinator moves to brokerId. */
  async moveCoordinator (group, brokerId) { await this._post(`groups/${encodeURIComponent(group)}/coordinator`, { broker: brokerId }) }
  /** POST /brokers/{id}/up: the broker serves again; ControlPlaneError 404 or 409 (it is up). */
  async brokerUp (brokerId) { await this._post(`brokers/${brokerId}/up`) }
  /** POST /reset: delete every topic and group (rules, faults and the request log stay). */
  async reset () { await this._post('reset') }
  /** POST /stale-end-offset: ListOffsets(latest) trails writes by d; 0 turns it off. Returns it as set. */
  async staleEndOffset (d) { return (await this._post('stale-end-offset', { d: goDuration(d) })).staleEndOffset }
  /** POST /clock/advance: move the manual clock (-manual-clock) by d; 409 on the wall clock. Returns {now, manual}. */
  advance (d) { return this._post('clock/advance', { d: goDuration(d) }) }

  /**
   * POST /topics/{topic}/compact: compact every partition of a topic with
   * cleanup.policy=compact now, as Kafka's log cleaner would (each
   * partition's last batch stays as it is); offsets keep their values, so
   * readers see gaps. Resolves to what it did per partition. Rejects with
   * ControlPlaneError, status 404 for an unknown topic and 409 for one that
   * is not compacted.
   */
  async compact (topic) {
    const { body } = await this._call('POST', `topics/${encodeURIComponent(topic)}/compact`, undefined, undefined, {
      404: `no topic ${topic} to compact`,
      409: `create ${topic} with cleanup.policy=compact (or compact,delete) to compact it`
    })
    return body || []
  }

  /**
   * POST /topics/{topic}/partitions/{partition}/skip?n=: the next batch
   * produced to the partition starts n offsets past its high watermark,
   * leaving the gap compaction leaves (skips before one batch add up).
   * Rejects with ControlPlaneError, status 404 for an unknown topic or
   * partition and 400 for n below 1 or a skip too far.
   */
  async skipOffsets (topic, partition, n) {
    if (!Number.isSafeInteger(partition)) throw new TypeError(`skipOffsets: partition must be an integer, not ${partition}`)
    if (!Number.isSafeInteger(n)) throw new TypeError(`skipOffsets: n must be an integer, not ${n}`)
    await this._call('POST', `topics/${encodeURIComponent(topic)}/partitions/${partition}/skip`, { n }, undefined, {
      404: `no partition ${partition} of topic ${topic}`,
      400: 'n is how many offsets to skip, at least 1'
    })
  }

  // ---- assertions ----

  /** Assert that the VAST rule refused a request (of api, when given); returns those requests. */
  async assertRefused (rule, { api } = {}) {
    const got = (await this.refusals(rule)).filter(r => api === undefined || r.api.toLowerCase() === api.toLowerCase())
    if (got.length) return got
    const others = await this.refusals()
    const what = `rule ${rule}` + (api === undefined ? '' : ` on ${api}`)
    if (others.length) throw new AssertionError(`no request was refused by VAST ${what}; the refusals were:\n${lines(others)}`)
    throw new AssertionError(`no request was refused by VAST ${what}; no request was refused at all`)
  }

  /** Assert that no VAST rule refused any request. */
  async assertNoRefusals () {
    const got = await this.refusals()
    if (got.length) {
      throw new AssertionError(`${got.length} request${got.length === 1 ? ' was' : 's were'} refused by VAST rules:\n${lines(got)}`)
    }
  }

  /** Assert that GET /audit found nothing in the clients' behaviour. */
  async assertNoFindings () {
    const { findings: got, dropped } = await this._audit()
    const more = dropped ? ` (and ${dropped} more the broker did not keep)` : ''
    if (got.length || dropped) throw new AssertionError(`${got.length} audit finding${got.length === 1 ? '' : 's'}${more}:\n${lines(got)}`)
  }

  /** Assert that group committed offset (the next to read) for the partition. */
  async assertCommitted (group, topic, partition, offset) {
    const msg = await this._committedMismatch(group, topic, partition, offset)
    if (msg) throw new AssertionError(msg)
  }

  async _committedMismatch (group, topic, partition, offset) {
    const g = await this.findGroup(group)
    if (!g) {
      const names = (await this.groups()).map(x => x.name).sort()
      return `group ${group} does not exist (groups: ${names.join(', ') || 'none'})`
    }
    const p = g.partitions.find(x => x.topic === topic && x.partition === partition)
    if (!p || p.committed === null) {
      const done = g.partitions.filter(x => x.committed !== null).map(x => `${x.topic}/${x.partition}=${x.committed}`)
      return `group ${group} committed nothing for ${topic}/${partition} (it committed: ${done.join(', ') || 'nothing'})`
    }
    if (p.committed !== offset) {
      return `group ${group} committed ${topic}/${partition} at ${p.committed}, want ${offset} (high watermark ${p.highWatermark}, lag ${p.lag})`
    }
    return ''
  }

  // ---- waits ----

  /**
   * Call cond until it returns something truthy, and return that. After
   * timeoutMs (waitTimeoutMs by default) throw WaitTimeout saying what was
   * awaited and, with describe, what was seen last.
   */
  async waitFor (what, cond, { timeoutMs, describe } = {}) {
    const limit = timeoutMs === undefined ? this.waitTimeoutMs : timeoutMs
    const deadline = Date.now() + limit
    let delay = 10
    for (;;) {
      const got = await cond()
      if (got) return got
      if (Date.now() >= deadline) {
        let seen = ''
        if (describe) {
          try {
            seen = '; last seen: ' + await describe()
          } catch (e) {
            seen = '; could not describe the state: ' + e.message
          }
        }
        throw new WaitTimeout(`timed out after ${limit} ms waiting for ${what}${seen}`)
      }
      await sleep(Math.min(delay, Math.max(0, deadline - Date.now())))
      delay = Math.min(delay * 2, 100)
    }
  }

  /**
   * Wait until group is in state (default Stable) with members members (any
   * number when undefined) and, when Stable, every member holds an
   * assignment. Returns the group.
   */
  waitGroup (group, { state = 'Stable', members, timeoutMs } = {}) {
    const cond = async () => {
      const g = await this.findGroup(group)
      if (!g || g.state !== state || (members !== undefined && g.members.length !== members)) return null
      if (state === 'Stable' && g.protocolType === 'consumer' && g.members.some(m => m.assignment === null)) return null
      return g
    }
    const describe = async () => {
      const g = await this.findGroup(group)
      if (!g) return `no group ${group}`
      return `state ${g.state}, generation ${g.generation}, ${g.members.length} member${g.members.length === 1 ? '' : 's'} (${g.members.map(m => m.clientId || m.memberId).join(', ')})`
    }
    const want = `group ${group} ${state}` + (members === undefined ? '' : ` with ${members} members`)
    return this.waitFor(want, cond, { timeoutMs, describe })
  }

  /** Wait until group is Stable with members members, each holding its assignment. */
  waitGroupStable (group, { members, timeoutMs } = {}) {
    return this.waitGroup(group, { state: 'Stable', members, timeoutMs })
  }

  /**
   * Wait until group is Stable with members members (any number when
   * undefined) and every member has its target assignment: for a KIP-848
   * consumer group (group.protocol=consumer) every member is at the
   * assignment epoch with nothing waiting to be revoked or released; for a
   * classic group, Stable. Returns the group.
   */
  waitGroupReconciled (group, { members, timeoutMs } = {}) {
    const cond = async () => {
      const g = await this.findGroup(group)
      if (!g || !g.reconciled || (members !== undefined && g.members.length !== members)) return null
      return g
    }
    const describe = async () => {
      const g = await this.findGroup(group)
      if (!g) return `no group ${group}`
      if (g.groupProtocol !== 'consumer') return `classic group, state ${g.state}, ${g.members.length} members`
      return `state ${g.state}, group epoch ${g.groupEpoch}, assignment epoch ${g.assignmentEpoch}, members: ` +
        (g.members.map(m => `${m.clientId || m.memberId} at epoch ${m.memberEpoch} (${m.memberState}) holds ` +
          `${JSON.stringify(m.assignment)}, target ${JSON.stringify(m.targetAssignment || {})}, revoking ${JSON.stringify(m.revoking || {})}`)
          .join('; ') || 'none')
    }
    const want = `group ${group} stable with every member at its target` + (members === undefined ? '' : ` (${members} members)`)
    return this.waitFor(want, cond, { timeoutMs, describe })
  }

  /** Wait until group has committed offset for the partition. */
  async waitCommitted (group, topic, partition, offset, { timeoutMs } = {}) {
    await this.waitFor(`group ${group} to commit ${topic}/${partition} at ${offset}`,
      async () => !(await this._committedMismatch(group, topic, partition, offset)),
      { timeoutMs, describe: () => this._committedMismatch(group, topic, partition, offset) })
  }

  /** Wait until the VAST rule has refused a request; returns those. */
  waitRefused (rule, { timeoutMs } = {}) {
    return this.waitFor(`a refusal by VAST rule ${rule}`, async () => {
      const got = await this.refusals(rule)
      return got.length ? got : null
    }, { timeoutMs, describe: async () => lines(await this.refusals()) || 'no refusals' })
  }

  /**
   * Wait until broker id broker has answered a request of api without an
   * error; returns those: how a test sees that a client moved to another
   * address (after a broker went down, a leader or coordinator moved, or
   * NOT_LEADER_OR_FOLLOWER). Clear the request log first (clearRequests)
   * to see only what came after.
   */
  waitServed (api, broker, { timeoutMs } = {}) {
    return this.waitFor(`a ${api} request served by broker ${broker}`, async () => {
      const got = (await this.requests({ api, broker })).filter(r => !r.errorCode)
      return got.length ? got : null
    }, { timeoutMs, describe: async () => lines(await this.requests({ api })) || `no ${api} requests` })
  }

  /** Wait until the partition's high watermark reaches offset. */
  async waitEndOffset (topic, partition, offset, { timeoutMs } = {}) {
    await this.waitFor(`${topic}/${partition} to reach offset ${offset}`, async () => {
      try {
        return (await this.endOffset(topic, partition)) >= offset
      } catch (e) {
        if (e instanceof ControlPlaneError && e.status === 404) return false
        throw e
      }
    }, { timeoutMs, describe: async () => `high watermark ${await this.endOffset(topic, partition)}` })
  }
}

// ---- the broker process ----

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

module.exports = {
  startBroker,
  findBinary,
  carriedBinary,
  goDuration,
  Client,
  Broker,
  VastfakeError,
  BinaryNotFoundError,
  StartError,
  PortInUseError,
  BrokerDiedError,
  ControlPlaneError,
  WaitTimeout,
  AssertionError
}
