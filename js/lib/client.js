// The client of a running vastfake's HTTP control plane, as the Python
// package's vastfake.client: typed calls, assertions and waits, each with
// a timeout or a deadline.

'use strict'

const http = require('node:http')

const { ControlPlaneError, WaitTimeout, AssertionError } = require('./errors.js')
const { UPDATE_HINT } = require('./binary.js')

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

  /**
   * Assert that share group has completed every record of the partition up
   * to offset: each acknowledged, or archived (rejected, or delivered
   * share.delivery.count.limit times), so its share start offset is past
   * offset (KIP-932; kafka and audit profiles).
   */
  async assertShareAcknowledged (group, topic, partition, offset) {
    const msg = await this._shareMismatch(group, topic, partition, offset)
    if (msg) throw new AssertionError(msg)
  }

  async _shareMismatch (group, topic, partition, offset) {
    const g = await this.findGroup(group)
    if (!g || g.groupProtocol !== 'share') return `no share group ${group}`
    const p = (g.sharePartitions || []).find(x => x.topic === topic && x.partition === partition)
    if (!p) return `share group ${group} has no state for ${topic}/${partition} yet`
    if (p.startOffset > offset) return ''
    const held = p.acquired.map(a => `${a.firstOffset}-${a.lastOffset} held by ${a.clientId || a.memberId}, ` +
      `delivery ${a.deliveryCount}, lock until ${a.lockDeadline}`).join('; ') || 'none held'
    return `share group ${group}'s start offset on ${topic}/${partition} is ${p.startOffset} ` +
      `(${p.available} available, ${p.archived} archived; ${held})`
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

  /** Wait until share group has completed every record of the partition up to offset (see assertShareAcknowledged). */
  async waitShareAcknowledged (group, topic, partition, offset, { timeoutMs } = {}) {
    await this.waitFor(`share group ${group} to acknowledge ${topic}/${partition} up to ${offset}`,
      async () => !(await this._shareMismatch(group, topic, partition, offset)),
      { timeoutMs, describe: () => this._shareMismatch(group, topic, partition, offset) })
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

module.exports = { Client, goDuration, within }
