// Every endpoint of the control plane has a call in the JavaScript client.
//
// The route table is read from the Go source (control/control.go,
// routes()), every method of Client is called against a stub that records
// what it is asked, and each route must have been asked for by some method:
// an endpoint added to the control plane without a client call fails here.
// The other way round, a path the client asks for that no route serves
// fails too (a typo, or an endpoint removed).
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { Client } = require('vastfake')

const CONTROL_GO = path.join(__dirname, '..', '..', 'control', 'control.go')

// Routes no client method is meant to call, and why.
const NOT_CALLED = {
  'GET /{$}': 'the live page is HTML for people; live() reads its data from GET /live.json'
}

// Paths the client calls that the control plane on this branch may not
// serve yet, and why. An entry the route table serves is simply covered.
const NOT_SERVED_YET = {
  'GET /audit': 'audit mode lands with its own branch',
  'DELETE /audit': 'audit mode lands with its own branch'
}

// An argument for each required parameter of a Client method, by name.
const ARGS = {
  topic: 't',
  name: 't',
  group: 'g',
  partition: 0,
  offset: 0,
  n: 1,
  d: '1s',
  api: 'Produce',
  err: 'NOT_LEADER_FOR_PARTITION',
  rule: 'MaxGroups',
  what: 'x',
  cond: () => true,
  addresses: ['127.0.0.1:9092'],
  brokerId: 1,
  broker: 1,
  transactionalId: 'x'
}

/**
 * The "METHOD /pattern" strings control/control.go serves: the entries of
 * routes(), and any pattern handed to a mux's Handle or HandleFunc in the
 * package (an endpoint registered outside the table counts too).
 */
function readRoutes () {
  let routes = []
  const m = /\nfunc \(s \*server\) routes\(\) \[\]route \{\n([\s\S]*?)\n\}\n/.exec(fs.readFileSync(CONTROL_GO, 'utf8'))
  if (m) {
    const body = m[1]
    routes = [...body.matchAll(/^\t\t\{"([A-Z]+ \/[^"]*)",/gm)].map(x => x[1])
    // Every entry of the table is one line starting with {": none skipped.
    assert.strictEqual(routes.length, body.split('\n\t\t{"').length - 1, body)
  }
  const dir = path.dirname(CONTROL_GO)
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.go') || f.endsWith('_test.go')) continue
    const src = fs.readFileSync(path.join(dir, f), 'utf8')
    routes.push(...[...src.matchAll(/\.Handle(?:Func)?\("([A-Z]+ \/[^"]*)"/g)].map(x => x[1]))
  }
  assert.ok(routes.length >= 20, `read only ${JSON.stringify(routes)} from ${CONTROL_GO}`)
  return routes
}

/** A RegExp matching "METHOD /path" for a net/http.ServeMux pattern. */
function patternRegExp (route) {
  const [method, p] = route.split(' ')
  let out = ''
  for (const seg of p.split('/').slice(1)) {
    if (seg === '{$}') out += '/' // exactly the path up to here
    else if (seg === '') out += '/.*' // a trailing slash: the subtree
    else if (seg.startsWith('{') && seg.endsWith('...}')) out += '/.+'
    else if (seg.startsWith('{')) out += '/[^/]+'
    else out += '/' + seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${method} ${out}$`)
}

// splitTop splits s at commas outside brackets.
function splitTop (s) {
  const out = []
  let depth = 0
  let cur = ''
  for (const ch of s) {
    if ('({['.includes(ch)) depth++
    if (')}]'.includes(ch)) depth--
    if (ch === ',' && depth === 0) {
      out.push(cur)
      cur = ''
    } else {
      cur += ch
    }
  }
  if (cur.trim()) out.push(cur)
  return out.map(x => x.trim())
}

// The arguments for a method: one for each parameter without a default,
// from ARGS (a destructured one gets an object of the names it lists).
function argsFor (name, fn) {
  const src = fn.toString()
  const start = src.indexOf('(')
  let depth = 0
  let end = start
  for (let i = start; i < src.length; i++) {
    if (src[i] === '(') depth++
    if (src[i] === ')' && --depth === 0) {
      end = i
      break
    }
  }
  const args = []
  for (const param of splitTop(src.slice(start + 1, end))) {
    const topLevel = param.replace(/\{[^}]*\}/g, '')
    if (topLevel.includes('=')) break // it and every later one have defaults
    if (param.startsWith('{')) {
      const obj = {}
      for (const k of splitTop(param.slice(1, -1)).map(x => x.split('=')[0].trim())) {
        if (k in ARGS) obj[k] = ARGS[k]
      }
      args.push(obj)
      continue
    }
    assert.ok(param in ARGS, `Client.${name}: add an argument for ${param} to ARGS`)
    args.push(ARGS[param])
  }
  return args
}

const inCheckout = fs.existsSync(CONTROL_GO)

test('every route has a client call', { skip: !inCheckout && !process.env.CI && `not in a vastfake checkout: no ${CONTROL_GO}` }, async () => {
  const routes = readRoutes()
  const seen = new Set()
  const server = http.createServer((req, res) => {
    seen.add(`${req.method} ${new URL(req.url, 'http://x').pathname}`)
    req.resume()
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}')
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  try {
    const c = new Client(`http://127.0.0.1:${server.address().port}/`, { timeoutMs: 5000, waitTimeoutMs: 10 })
    for (const name of Object.getOwnPropertyNames(Client.prototype)) {
      if (name.startsWith('_') || name === 'constructor') continue
      const fn = Client.prototype[name]
      try {
        const got = fn.apply(c, argsFor(name, fn))
        if (got && typeof got[Symbol.asyncIterator] === 'function') await got.next()
        else await got
      } catch (e) {
        if (e instanceof assert.AssertionError) throw e
        // The stub's {} fits few answers; only the request matters.
      }
    }
  } finally {
    server.close()
  }
  const regexps = new Map(routes.map(r => [r, patternRegExp(r)]))
  const uncalled = routes.filter(r => !(r in NOT_CALLED) && ![...seen].some(s => regexps.get(r).test(s)))
  assert.deepStrictEqual(uncalled, [], 'control/control.go serves routes the JavaScript client has no call for; ' +
    `add a method to js/lib/client.js and js/index.d.ts (and to python/vastfake/client.py): ${uncalled.join(', ')}`)
  const unserved = [...seen].filter(s => !(s in NOT_SERVED_YET) && ![...regexps.values()].some(x => x.test(s))).sort()
  assert.deepStrictEqual(unserved, [], 'the JavaScript client calls paths control/control.go does not serve')
  const stale = Object.keys(NOT_CALLED).filter(r => !routes.includes(r))
  assert.deepStrictEqual(stale, [], 'NOT_CALLED names routes control/control.go no longer has')
})

test('every client method is typed in index.d.ts', () => {
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const body = /export class Client \{([\s\S]*?)\n\}/.exec(dts)[1]
  const typed = new Set([...body.matchAll(/^ {2}(\w+)\s*(?:<[^>]*>)?\s*\(/gm)].map(m => m[1]))
  const untyped = Object.getOwnPropertyNames(Client.prototype)
    .filter(n => !n.startsWith('_') && n !== 'constructor' && !typed.has(n))
  assert.deepStrictEqual(untyped, [])
})

test('route patterns', () => {
  assert.ok(patternRegExp('GET /{$}').test('GET /'))
  assert.ok(!patternRegExp('GET /{$}').test('GET /x'))
  const r = patternRegExp('POST /topics/{name}/partitions/{p}/skip')
  assert.ok(r.test('POST /topics/a%2Fb/partitions/0/skip'))
  assert.ok(!r.test('GET /topics/a/partitions/0/skip') && !r.test('POST /topics/a/partitions/0'))
  assert.ok(patternRegExp('GET /static/').test('GET /static/a/b'))
  assert.ok(patternRegExp('GET /files/{path...}').test('GET /files/a/b'))
})
