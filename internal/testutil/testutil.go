// Package testutil holds what the tests of several vastfake packages share:
// a buffer that a logger and a test may use at once, the process's CPU time,
// which benchmarks report beside wall time on a loaded machine, and a check
// that a package never reads the wall clock. It imports no vastfake package,
// so that any package's own tests may use it.
package testutil
