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

//
// This file gathers the package's modules (lib/), which are split as the
// Python package is: errors, binary (finding or building it), client (the
// control plane) and broker (the child process).

'use strict'

const errors = require('./lib/errors.js')
const { findBinary, carriedBinary } = require('./lib/binary.js')
const { Client, goDuration } = require('./lib/client.js')
const { Broker, startBroker } = require('./lib/broker.js')

module.exports = {
  startBroker,
  findBinary,
  carriedBinary,
  goDuration,
  Client,
  Broker,
  ...errors
}
