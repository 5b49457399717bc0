// The typed answers (index.d.ts) cannot drift from the HTTP answers: each
// interface's fields must be the JSON names the binary's Go view can send,
// and the keys of a real answer must be fields of it. A field the binary
// adds fails here until index.d.ts carries it.
'use strict'

const test = require('node:test')
const assert = require('node:assert')
const fs = require('node:fs')
const path = require('node:path')
const { startBroker } = require('vastfake')

const ROOT = path.join(__dirname, '..', '..')

// The field names of an exported interface of index.d.ts.
function tsFields (name) {
  const src = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const m = src.match(new RegExp(`export interface ${name} \\{([^}]*)\\}`))
  assert.ok(m, `no interface ${name} in index.d.ts`)
  const body = m[1].replace(/\/\*\*[\s\S]*?\*\//g, '')
  return new Set([...body.matchAll(/(\w+)\??\s*:/g)].map(x => x[1]))
}

// The JSON names of a Go struct's fields: every key the binary can send.
function goTags (file, struct) {
  const src = fs.readFileSync(path.join(ROOT, file), 'utf8')
  const m = src.match(new RegExp(`\\ntype ${struct} struct \\{\\n([\\s\\S]*?)\\n\\}\\n`))
  assert.ok(m, `no struct ${struct} in ${file}`)
  return new Set([...m[1].matchAll(/json:"([^",]+)/g)].map(x => x[1]).filter(t => t !== '-'))
}

const sorted = s => [...s].sort()

test('interfaces match the Go views', () => {
  assert.deepStrictEqual(sorted(tsFields('Partition')), sorted(goTags('control/views.go', 'partitionView')))
  assert.deepStrictEqual(sorted(tsFields('Topic')), sorted(goTags('control/views.go', 'topicView')))
  assert.deepStrictEqual(sorted(tsFields('Request')), sorted(goTags('control/views.go', 'requestView')))
  assert.deepStrictEqual(sorted(tsFields('BrokerInfo')), sorted(goTags('control/control.go', 'brokerView')))
  assert.deepStrictEqual(sorted(tsFields('Finding')), sorted(goTags('broker/audit.go', 'Finding')))
  assert.deepStrictEqual(sorted(tsFields('FetchDetail')), sorted(goTags('control/views.go', 'fetchView')))
  assert.deepStrictEqual(sorted(tsFields('ErrorCount')), sorted(goTags('broker/auditerrors.go', 'ErrorCount')))
  assert.deepStrictEqual(sorted(tsFields('GroupsCreated')), sorted(goTags('broker/groupforecast.go', 'GroupsCreated')))
  assert.deepStrictEqual(sorted(tsFields('FetchPartition')), sorted(goTags('control/views.go', 'fetchPartitionView')))
})

test('interfaces match a real answer', async () => {
  const broker = await startBroker({ profile: 'audit', topics: ['orders:2'], brokers: 2 })
  try {
    const topics = await broker.topics()
    const keys = objs => new Set(objs.flatMap(o => Object.keys(o)))
    assert.deepStrictEqual(sorted(keys(topics)), sorted(tsFields('Topic')))
    assert.deepStrictEqual(sorted(keys(topics.flatMap(t => t.partitions))), sorted(tsFields('Partition')))
    const brokers = await broker.brokers()
    assert.deepStrictEqual(sorted(keys(brokers)), sorted(tsFields('BrokerInfo')))
    const ids = new Set(brokers.map(b => b.id))
    for (const p of topics.flatMap(t => t.partitions)) assert.ok(ids.has(p.leader), `leader ${p.leader}`)
    const requests = await broker.requests()
    const fields = tsFields('Request')
    for (const k of keys(requests)) assert.ok(fields.has(k), `request key ${k} is not a field of Request`)
  } finally {
    await broker.stop()
  }
})
