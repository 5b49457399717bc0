// A KIP-848 consumer group (group.protocol=consumer) seen through the
// control plane: the group's protocol and epochs, each member's current and
// target assignment, the partitions waiting to be revoked, and
// waitGroupReconciled. kafkajs has no KIP-848 support, so two members are
// driven by hand with ConsumerGroupHeartbeat v0 requests on raw sockets,
// as a client reconciles: join, learn the new assignment, revoke, heartbeat
// again.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const net = require('node:net')
const { startBroker } = require('vastfake')

function uvarint (n) {
  const out = []
  do {
    let b = n & 0x7f
    n >>>= 7
    if (n) b |= 0x80
    out.push(b)
  } while (n)
  return Buffer.from(out)
}

function cstr (s) {
  if (s === null) return Buffer.from([0])
  const raw = Buffer.from(s)
  return Buffer.concat([uvarint(raw.length + 1), raw])
}

function i32 (n) {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

function readUvarint (buf, i) {
  let n = 0
  let shift = 0
  for (;;) {
    const b = buf[i++]
    n |= (b & 0x7f) << shift
    if (!(b & 0x80)) return [n, i]
    shift += 7
  }
}

function readCstr (buf, i) {
  const [n, j] = readUvarint(buf, i)
  if (n === 0) return [null, j]
  return [buf.subarray(j, j + n - 1).toString(), j + n - 1]
}

// Member is one KIP-848 member on its own connection.
class Member {
  constructor (bootstrap, group) {
    const [host, port] = bootstrap.split(':')
    this.sock = net.connect(Number(port), host)
    this.group = group
    this.memberId = ''
    this.epoch = 0
    this.corr = 0
    this.owned = null
    this.buf = Buffer.alloc(0)
    this.waiters = []
    this.sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d])
      this._drain()
    })
  }

  _drain () {
    while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readInt32BE(0) && this.waiters.length) {
      const n = this.buf.readInt32BE(0)
      const frame = this.buf.subarray(4, 4 + n)
      this.buf = this.buf.subarray(4 + n)
      this.waiters.shift()(frame)
    }
  }

  // heartbeat sends one heartbeat (owned null: unchanged) and resolves to
  // its error code, keeping the member's id, epoch and assignment.
  async heartbeat ({ topics = null, owned = null, join = false } = {}) {
    this.corr++
    const parts = [cstr(this.group), cstr(this.memberId), i32(this.epoch), cstr(null), cstr(null), i32(join ? 30000 : -1)]
    parts.push(topics === null ? Buffer.from([0]) : Buffer.concat([uvarint(topics.length + 1), ...topics.map(cstr)]))
    parts.push(cstr(null))
    if (owned === null) {
      parts.push(Buffer.from([0]))
    } else {
      parts.push(uvarint(owned.length + 1))
      for (const [tid, ps] of owned) parts.push(tid, uvarint(ps.length + 1), ...ps.map(i32), Buffer.from([0]))
    }
    parts.push(Buffer.from([0]))
    const header = Buffer.alloc(8)
    header.writeInt16BE(68, 0)
    header.writeInt16BE(0, 2)
    header.writeInt32BE(this.corr, 4)
    const clientID = Buffer.from('js848')
    const len = Buffer.alloc(2)
    len.writeInt16BE(clientID.length)
    const frame = Buffer.concat([header, len, clientID, Buffer.from([0]), ...parts])
    const answer = new Promise((resolve) => { this.waiters.push(resolve) })
    this.sock.write(Buffer.concat([i32(frame.length), frame]))
    const buf = await answer
    assert.strictEqual(buf.readInt32BE(0), this.corr)
    let i = 5 // correlation id and the header's empty tags
    const code = buf.readInt16BE(i + 4)
    i += 6
    let memberId;
    [, i] = readCstr(buf, i);
    [memberId, i] = readCstr(buf, i)
    const epoch = buf.readInt32BE(i)
    i += 8
    if (code !== 0) return code
    this.memberId = memberId
    this.epoch = epoch
    if (buf[i] !== 0xff) { // a nullable struct: -1 for null
      i++
      let n;
      [n, i] = readUvarint(buf, i)
      const assignment = []
      for (let t = 0; t < n - 1; t++) {
        const tid = buf.subarray(i, i + 16)
        i += 16
        let m;
        [m, i] = readUvarint(buf, i)
        const ps = []
        for (let k = 0; k < m - 1; k++) ps.push(buf.readInt32BE(i + 4 * k))
        i += 4 * (m - 1) + 1 // and the topic's tags
        assignment.push([Buffer.from(tid), ps])
      }
      this.owned = assignment
    }
    return 0
  }

  close () { this.sock.destroy() }
}

const count = (a) => Object.values(a || {}).reduce((s, ps) => s + ps.length, 0)

test('a KIP-848 group reconciles, seen from the control plane', async (t) => {
  const broker = await startBroker({ profile: 'kafka', topics: ['t848:2'] })
  t.after(() => broker.stop())
  const a = new Member(broker.bootstrap, 'g848')
  t.after(() => a.close())
  assert.strictEqual(await a.heartbeat({ topics: ['t848'], owned: [], join: true }), 0)
  let g = await broker.waitGroupReconciled('g848', { members: 1 })
  assert.strictEqual(g.groupProtocol, 'consumer')
  assert.deepStrictEqual([g.groupEpoch, g.assignmentEpoch, g.protocol], [1, 1, 'uniform'])
  assert.strictEqual(g.members[0].memberEpoch, 1)
  assert.strictEqual(g.members[0].memberState, 'STABLE')
  assert.deepStrictEqual(g.members[0].assignment, { t848: [0, 1] })
  assert.deepStrictEqual(g.members[0].targetAssignment, { t848: [0, 1] })

  // A second member: a must give one partition up before c gets it.
  const c = new Member(broker.bootstrap, 'g848')
  t.after(() => c.close())
  assert.strictEqual(await c.heartbeat({ topics: ['t848'], owned: [], join: true }), 0)
  assert.strictEqual(await a.heartbeat(), 0)
  g = await broker.group('g848')
  assert.strictEqual(g.reconciled, false)
  assert.strictEqual(g.state, 'Reconciling')
  const ma = g.members.find(m => m.memberId === a.memberId)
  assert.strictEqual(ma.memberState, 'UNREVOKED_PARTITIONS')
  assert.strictEqual(count(ma.revoking), 1)
  assert.strictEqual(count(ma.assignment), 1)
  // a revokes (reports only what it kept); c then gets the partition.
  assert.strictEqual(await a.heartbeat({ owned: a.owned }), 0)
  assert.strictEqual(await c.heartbeat({ owned: c.owned || [] }), 0)
  g = await broker.waitGroupReconciled('g848', { members: 2 })
  for (const m of g.members) {
    assert.strictEqual(m.memberEpoch, 2)
    assert.deepStrictEqual(m.assignment, m.targetAssignment)
    assert.strictEqual(m.revoking, undefined)
  }
  assert.deepStrictEqual(g.members.flatMap(m => m.assignment.t848).sort(), [0, 1])
})
