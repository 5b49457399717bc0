package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// run started by a test must have closed its broker, HTTP server and
// clients by the test's end. Started with VASTFAKE_TEST_CHILD set, the
// test binary is the vastfake binary instead (see runChild); with
// VASTFAKE_TEST_RESERVE set, it measures the heap reserve (see
// reserveChild); with VASTFAKE_TEST_MAIN set, it is the binary's main (see
// mainChild).
func TestMain(m *testing.M) {
	if os.Getenv("VASTFAKE_TEST_CHILD") != "" {
		os.Exit(runChild())
	}
	if os.Getenv("VASTFAKE_TEST_MAIN") != "" {
		mainChild()
	}
	if os.Getenv("VASTFAKE_TEST_RESERVE") != "" {
		os.Exit(reserveChild())
	}
	goleak.VerifyTestMain(m)
}
