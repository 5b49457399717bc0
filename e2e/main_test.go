package e2e_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// broker, client and connection must be closed by its test's cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
