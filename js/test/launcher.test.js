// The launcher: the errors a test sees when something goes wrong (no
// binary, a taken port, bad flags, a broker that dies, a slow start) and
// the broker's end when the test process is interrupted; and the control
// plane client's contracts (record pages, audit findings) against a stub.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const { spawn, spawnSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const vastfake = require('vastfake')
const { startBroker, findBinary, goDuration, Client } = vastfake

let bin
test.before(async () => { bin = await findBinary() })
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// refused resolves once nothing listens at hostport any more, or rejects
// after 30 s.
async function refused (hostport) {
  const [host, port] = [hostport.slice(0, hostport.lastIndexOf(':')), Number(hostport.slice(hostport.lastIndexOf(':') + 1))]
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const open = await new Promise(resolve => {
      const s = net.connect({ host, port }, () => { s.destroy(); resolve(true) })
      s.on('error', () => resolve(false))
    })
    if (!open) return
    await sleep(50)
  }
  throw new Error(`something still listens at ${hostport} after 30 s`)
}

function tmpdir (t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vastfake-js-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

function script (dir, body) {
  const file = path.join(dir, 'vastfake')
  fs.writeFileSync(file, '#!/bin/sh\n' + body + '\n', { mode: 0o755 })
  return file
}

test('kafkaVersion is a start argument', async () => {
  const b = await startBroker({ binary: bin, profile: 'kafka', kafkaVersion: '4.0' })
  try {
    assert.strictEqual((await b.health()).kafkaVersion, '4.0')
  } finally {
    await b.stop()
  }
  await assert.rejects(startBroker({ binary: bin, kafkaVersion: '3.9' }), /-kafka-version .*want one of 4\.0, 4\.1, 4\.2, 4\.3/)
})

test('starts, answers and stops cleanly', async () => {
  const b = await startBroker({ binary: bin, topics: ['orders:3'], rules: { MaxGroups: 5, NoCompression: false } })
  try {
    assert.match(b.bootstrap, /^127\.0\.0\.1:\d+$/)
    assert.strictEqual((await b.health()).bootstrap, b.bootstrap)
    assert.deepStrictEqual((await b.topic('orders')).partitions.map(p => p.partition), [0, 1, 2])
    const rules = await b.rules()
    assert.strictEqual(rules.MaxGroups, 5)
    assert.strictEqual(rules.NoCompression, false)
  } finally {
    assert.strictEqual(await b.stop(), 0) // SIGTERM: a clean close
  }
  assert.strictEqual(b.running, false)
  await refused(b.bootstrap)
  assert.strictEqual(await b.stop(), 0)
  await assert.rejects(b.topics(), /the broker was stopped/)
})

test('Symbol.asyncDispose stops the broker, as await using does', async () => {
  const b = await startBroker({ binary: bin })
  assert.strictEqual(typeof b[Symbol.asyncDispose], 'function')
  await b[Symbol.asyncDispose]()
  assert.strictEqual(b.running, false)
  await refused(b.bootstrap)
  assert.strictEqual(vastfake.WaitTimeoutError, vastfake.WaitTimeout, "Python's name for it")
})

test('the package is split as the Python one is, and index.js gathers it', () => {
  for (const m of ['errors', 'binary', 'client', 'broker']) {
    assert.ok(fs.existsSync(path.join(__dirname, '..', 'lib', m + '.js')), `lib/${m}.js`)
  }
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'))
  assert.ok(pkg.files.includes('lib'), 'package.json ships lib/')
})

test('faults name partitions and can drop the answer', async () => {
  const b = await startBroker({ binary: bin, topics: ['orders:3'] })
  try {
    const f = await b.injectFault({ api: 'Produce', topic: 'orders', partitions: [1, 2], count: 1, dropAnswer: true })
    assert.strictEqual(f.dropAnswer, true)
    assert.strictEqual(f.err, '')
    assert.deepStrictEqual(f.partitions, [1, 2])
    await assert.rejects(b.injectFault({ api: 'Produce' }), TypeError)
  } finally {
    await b.stop()
  }
})

test('the control plane token is sent', async () => {
  const b = await startBroker({ binary: bin, args: ['-user', 'app:secret'] })
  try {
    await b.topics()
    await assert.rejects(new Client(b.url).topics(), err => err.status === 401)
  } finally {
    await b.stop()
  }
})

test('a missing binary says how to get one', async (t) => {
  const dir = tmpdir(t)
  const pkg = path.join(dir, 'node_modules', 'vastfake')
  fs.mkdirSync(pkg, { recursive: true })
  fs.copyFileSync(path.join(__dirname, '..', 'index.js'), path.join(pkg, 'index.js'))
  fs.cpSync(path.join(__dirname, '..', 'lib'), path.join(pkg, 'lib'), { recursive: true })
  const code = "require('vastfake').startBroker().catch(e => { console.log(e.name + ': ' + e.message) })"
  const run = spawnSync(process.execPath, ['-e', code], { cwd: dir, env: { PATH: path.join(dir, 'empty') }, encoding: 'utf8', timeout: 60_000 })
  assert.strictEqual(run.status, 0, run.stderr)
  assert.match(run.stdout, /^BinaryNotFoundError: no vastfake binary/)
  // A way that works from a clone today, and the published one for later.
  assert.match(run.stdout, /in a clone of the vastfake repository with `go install \.\/cmd\/vastfake`/)
  assert.match(run.stdout, /VASTFAKE_BIN/)
  assert.match(run.stdout, /`go install github\.com\/vastfake\/vastfake\/cmd\/vastfake@latest` works once the module is published/)
})

test('inside a checkout, with go on PATH, the binary is built once, said and cached on disk', { skip: !findGo() && 'needs go on PATH' }, async (t) => {
  // Each process is a test file under node --test. Two build at once into
  // an empty cache; a third finds their binary and builds nothing.
  const cache = tmpdir(t)
  const env = { ...process.env, PATH: path.dirname(findGo()), VASTFAKE_CACHE_DIR: cache }
  delete env.VASTFAKE_BIN
  delete env.VASTFAKE_SRC
  const code = "require('vastfake').findBinary().then(b => { require('fs').accessSync(b, require('fs').constants.X_OK); console.log(b) })"
  const find = () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', code], { cwd: path.join(__dirname, '..'), env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.once('error', reject)
    child.once('close', status => resolve({ status, stdout, stderr }))
  })
  const runs = await Promise.all([find(), find()])
  for (const run of runs) {
    assert.strictEqual(run.status, 0, run.stderr)
    assert.match(run.stderr, /^vastfake: building the broker from .* \(go build \.\/cmd\/vastfake\); it is cached in /)
    assert.strictEqual(path.dirname(run.stdout.trim()), cache)
  }
  assert.strictEqual(runs[0].stdout, runs[1].stdout)
  const again = await find()
  assert.strictEqual(again.status, 0, again.stderr)
  assert.strictEqual(again.stdout, runs[0].stdout)
  assert.strictEqual(again.stderr, '') // no build, no notice
  assert.deepStrictEqual(fs.readdirSync(cache), [path.basename(runs[0].stdout.trim())]) // no temporary file left
})

test('the build cache keeps the most recently used', { skip: !findGo() && 'needs go on PATH' }, (t) => {
  // Its bound: the binary just built and the 4 most recently used others;
  // temporary files of builds that died over an hour ago go too, those of
  // builds under way stay.
  const cache = tmpdir(t)
  const now = Date.now() / 1000
  const file = (name, age) => {
    fs.writeFileSync(path.join(cache, name), '')
    fs.utimesSync(path.join(cache, name), now - age, now - age)
  }
  for (let i = 0; i < 7; i++) file(`vastfake-old${i}`, 100 * (i + 1)) // old0 is the most recent
  file('.vastfake-dead-1-x', 7200)
  file('.vastfake-building-2-y', 0)
  const env = { ...process.env, PATH: path.dirname(findGo()), VASTFAKE_CACHE_DIR: cache }
  delete env.VASTFAKE_BIN
  delete env.VASTFAKE_SRC
  const run = spawnSync(process.execPath, ['-e', "require('vastfake').findBinary().then(console.log)"], { cwd: path.join(__dirname, '..'), env, encoding: 'utf8', timeout: 300_000 })
  assert.strictEqual(run.status, 0, run.stderr)
  assert.deepStrictEqual(fs.readdirSync(cache).sort(), ['.vastfake-building-2-y', path.basename(run.stdout.trim()),
    'vastfake-old0', 'vastfake-old1', 'vastfake-old2', 'vastfake-old3'].sort())
})

function findGo () {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'go'))) return path.join(dir, 'go')
  }
  return null
}

test('a taken port is named', async () => {
  const server = net.createServer()
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const taken = `127.0.0.1:${server.address().port}`
  try {
    await assert.rejects(startBroker({ binary: bin, listen: taken }), err => {
      assert.strictEqual(err.name, 'PortInUseError')
      assert.ok(err.message.includes(`the port is taken (listen=${taken}`), err.message)
      assert.match(err.stderr, /address already in use/)
      return true
    })
  } finally {
    server.close()
  }
})

test('a bad flag quotes the broker', async () => {
  await assert.rejects(startBroker({ binary: bin, args: ['-no-such-flag'] }), err => {
    assert.strictEqual(err.name, 'StartError')
    assert.match(err.message, /exited with code 2 before it listened/)
    assert.match(err.message, /flag provided but not defined: -no-such-flag/)
    return true
  })
})

test('an old binary is named', async (t) => {
  const old = script(tmpdir(t), "echo 'flag provided but not defined: -exit-on-stdin-close' >&2; exit 2")
  await assert.rejects(startBroker({ binary: old }), /older than the vastfake package/)
})

test('a slow start times out', async (t) => {
  const slow = script(tmpdir(t), 'echo starting >&2; exec sleep 60')
  await assert.rejects(startBroker({ binary: slow, startTimeoutMs: 500 }), err => {
    assert.strictEqual(err.name, 'StartError')
    assert.match(err.message, /printed no "listening on" line within 500 ms; stderr:\nstarting/)
    return true
  })
})

test('a dead broker fails the next call', async () => {
  const b = await startBroker({ binary: bin })
  try {
    await b.waitFor('its start log line', () => b.stderrTail().includes('vastfake started'))
    process.kill(b.pid, 'SIGKILL')
    await b.waitFor('the broker to die', () => !b.running)
    await assert.rejects(b.topics(), err => {
      assert.strictEqual(err.name, 'BrokerDiedError')
      assert.match(err.message, /died: it exited with signal SIGKILL/)
      assert.match(err.message, /vastfake started/) // the tail of its stderr
      return true
    })
  } finally {
    await b.stop()
  }
})

// Node sets every signal to its default at start (and libuv again in the
// children it spawns), so the test process below reacts to each signal
// whatever the runner inherited (nohup, a shell's background job).
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL']) {
  test(`the broker dies with a test process killed by ${sig}`, async () => {
    const code = `require('vastfake').startBroker({ binary: ${JSON.stringify(bin)} })
      .then(b => { console.log(b.bootstrap); setInterval(() => {}, 1000) })`
    const child = spawn(process.execPath, ['-e', code], { cwd: path.join(__dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const bootstrap = await new Promise((resolve, reject) => {
        let out = ''
        child.stdout.on('data', d => { out += d; if (out.includes('\n')) resolve(out.trim()) })
        child.once('exit', code => reject(new Error(`the test process exited with ${code}`)))
      })
      child.kill(sig)
      await refused(bootstrap)
    } finally {
      child.kill('SIGKILL')
    }
  })
}

test('a forgotten broker does not keep the process alive', async () => {
  const code = `require('vastfake').startBroker({ binary: ${JSON.stringify(bin)} }).then(b => console.log(b.bootstrap))`
  const run = spawnSync(process.execPath, ['-e', code], { cwd: path.join(__dirname, '..'), encoding: 'utf8', timeout: 60_000 })
  assert.strictEqual(run.status, 0, run.stderr)
  await refused(run.stdout.trim()) // stopped by the exit handler
})

test('goDuration', () => {
  assert.strictEqual(goDuration('1m30s'), '1m30s')
  assert.strictEqual(goDuration(1500), '1500000000ns')
  assert.throws(() => goDuration(-1), TypeError)
})

test('ESM import', async () => {
  const m = await import('vastfake')
  assert.strictEqual(m.startBroker, startBroker)
})

// A control plane that serves record pages and GET /audit from stub.
const stub = { records: [], nextHeader: true, findings: [], dropped: 0, seen: [], connection: [], open: new Set() }

async function withStub (fn) {
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x')
    stub.seen.push(u.search)
    stub.connection.push(req.headers.connection)
    let body
    const headers = { 'Content-Type': 'application/json' }
    if (u.pathname === '/audit' && req.method === 'DELETE') {
      stub.findings = []
      body = { status: 'ok' }
    } else if (u.pathname === '/audit') {
      body = { findings: stub.findings }
      if (stub.dropped) body.dropped = stub.dropped
    } else if (u.pathname.endsWith('/records')) {
      const off = Number(u.searchParams.get('offset'))
      const limit = Number(u.searchParams.get('limit'))
      const page = stub.records.filter(o => o >= off).slice(0, limit)
      body = page.map(o => ({ offset: o, timestampMs: 0, timestamp: null, key: null, value: `r${o}` }))
      const rest = stub.records.filter(o => o > (page.length ? page[page.length - 1] : off))
      if (stub.nextHeader && page.length && rest.length) headers['Next-Offset'] = String(rest[0])
    } else {
      res.writeHead(404, headers).end('{"error":"Not Found"}')
      return
    }
    res.writeHead(200, headers).end(JSON.stringify(body))
  })
  server.on('connection', sock => {
    stub.open.add(sock)
    sock.on('close', () => stub.open.delete(sock))
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  stub.seen = []
  stub.connection = []
  try {
    await fn(new Client(`http://127.0.0.1:${server.address().port}`, { timeoutMs: 5000 }))
  } finally {
    server.close()
  }
}

test('record pages follow Next-Offset', () => withStub(async c => {
  stub.records = [0, 1, 2, 5, 6, 9, 10] // gaps, as after compaction
  stub.nextHeader = true
  const got = []
  for await (const r of c.iterRecords('t', 0, { pageSize: 3 })) got.push(r.offset)
  assert.deepStrictEqual(got, stub.records)
  assert.deepStrictEqual(stub.seen, ['?offset=0&limit=3', '?offset=5&limit=3', '?offset=10&limit=3'])
  assert.deepStrictEqual(await c.values('t', 0), stub.records.map(o => `r${o}`))
}))

test('record pages without Next-Offset continue after a full page', () => withStub(async c => {
  stub.records = [0, 1, 2, 3, 4, 5]
  stub.nextHeader = false
  assert.deepStrictEqual((await c.records('t', 0)).length, 6)
  stub.seen = []
  const got = []
  for await (const r of c.iterRecords('t', 0, { pageSize: 3 })) got.push(r.offset)
  assert.deepStrictEqual(got, stub.records)
  assert.deepStrictEqual(stub.seen, ['?offset=0&limit=3', '?offset=3&limit=3', '?offset=6&limit=3'])
}))

test('audit findings and a binary without /audit', () => withStub(async c => {
  stub.findings = [{
    rule: 'NoIdempotence', kind: 'refused', source: 'InitProducerID', clientId: 'orders-svc', clientSoftware: 'kafkajs',
    clientVersion: '2.2.4', topic: 'orders', group: '', count: 3, first: '2026-01-02T03:04:05Z', last: '2026-01-02T03:04:06Z',
    advice: 'set idempotent: false', detail: 'InitProducerID is not served'
  }]
  assert.strictEqual((await c.findings())[0].clientSoftware, 'kafkajs')
  await assert.rejects(c.assertNoFindings(), {
    code: 'ERR_ASSERTION',
    message: '1 audit finding:\n  NoIdempotence [refused] from orders-svc (kafkajs 2.2.4) on topic orders, 3 times: ' +
      'InitProducerID is not served -- set idempotent: false'
  })
  stub.dropped = 2
  await assert.rejects(c.assertNoFindings(), { code: 'ERR_ASSERTION', message: /^1 audit finding \(and 2 more the broker did not keep\):\n {2}NoIdem/ })
  stub.dropped = 0
  await c.clearFindings() // DELETE /audit
  assert.deepStrictEqual(stub.findings, [])
  assert.deepStrictEqual(await c.findings(), [])
  await c.assertNoFindings()
  await assert.rejects(c.rules(), /GET \/rules: 404, this vastfake binary has no such endpoint; it is older than the vastfake package/)
}))

// The control plane serves at most 64 connections at once: each call asks
// for its connection to be closed with the answer, and none stays open.
test('every call closes its connection', () => withStub(async c => {
  stub.records = [0, 1, 2]
  stub.findings = []
  for (let i = 0; i < 5; i++) {
    await c.records('t', 0)
    await c.findings()
    await c.clearFindings()
  }
  assert.strictEqual(stub.connection.length, 15)
  assert.deepStrictEqual([...new Set(stub.connection)], ['close'])
  await c.waitFor('the stub to see every connection closed', () => stub.open.size === 0, {
    timeoutMs: 10_000, describe: () => `${stub.open.size} open`
  })
}))

test('no answer is an error, not a hang', async () => {
  await assert.rejects(new Client('http://127.0.0.1:9/', { timeoutMs: 2000 }).topics(), /no answer from the control plane at http:\/\/127\.0\.0\.1:9\//)
})

test('a wait says what it saw', async () => {
  const b = await startBroker({ binary: bin })
  try {
    await assert.rejects(b.waitGroupStable('billing', { members: 2, timeoutMs: 200 }), {
      name: 'WaitTimeout',
      message: 'timed out after 200 ms waiting for group billing Stable with 2 members; last seen: no group billing'
    })
    const found = await b.findings().catch(e => e)
    if (found instanceof Error) {
      assert.match(found.message, /this vastfake binary has no such endpoint/) // a binary without GET \/audit
    } else {
      assert.deepStrictEqual(found, [])
    }
  } finally {
    await b.stop()
  }
})
