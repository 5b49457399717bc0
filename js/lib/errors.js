// The errors vastfake's package throws, as the Python package's
// vastfake.errors: one base class, and one class per way a start, a call or
// a wait fails.

'use strict'

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
/** WaitTimeout by the name Python's package gives it; the same class. */
const WaitTimeoutError = WaitTimeout

module.exports = {
  VastfakeError,
  BinaryNotFoundError,
  StartError,
  PortInUseError,
  BrokerDiedError,
  ControlPlaneError,
  WaitTimeout,
  WaitTimeoutError,
  AssertionError
}
