package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// run started by a test must have closed its broker, HTTP server and
// clients by the test's end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
