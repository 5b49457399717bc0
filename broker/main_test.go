package broker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every
// broker, connection and client a test starts must be closed by its end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
