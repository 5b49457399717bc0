#!/usr/bin/env node
// npx vastfake [flags]: run the vastfake binary with the flags given
// (npx vastfake -h lists them), found as startBroker finds it: the one the
// installed platform package carries, so that a machine with Node.js and
// no Go toolchain has the broker for development too.
'use strict'

const { spawn } = require('node:child_process')
const { findBinary } = require('./index.js')

findBinary().then(binary => {
  const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' })
  // Signals sent to this process alone (kill, a process manager) reach the broker too.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      try {
        child.kill(sig)
      } catch {}
    })
  }
  child.once('error', e => {
    process.stderr.write(`vastfake: cannot run ${binary}: ${e.message}\n`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => {
    if (signal) {
      // End as the broker ended: of the same signal.
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
      return
    }
    process.exit(code)
  })
}, e => {
  process.stderr.write(`vastfake: ${e.message}\n`)
  process.exit(1)
})
