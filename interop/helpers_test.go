package interop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

const (
	// limit is VAST's value (and key) size cap, 126 KB.
	limit = 126 << 10
	// testTimeout bounds every context and wait of one test.
	testTimeout = 20 * time.Second
)

// ctxT returns a context that ends with the test or after testTimeout.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every few milliseconds until it holds, failing the test
// with msg if it does not within timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", timeout, fmt.Sprintf(msg, args...))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// profiles runs fn once per rules profile, each with its own broker started
// with opts.
func profiles(t *testing.T, fn func(t *testing.T, profile string, b *broker.Broker), opts ...broker.Option) {
	for _, p := range []string{"vast", "kafka"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			fn(t, p, fixtures.StartBroker(t, append([]broker.Option{broker.WithProfile(p)}, opts...)...))
		})
	}
}

// key and value of record i of the keyed scenario; partition is i%3.
func key(i int) string   { return fmt.Sprintf("order-%d", i) }
func value(i int) string { return fmt.Sprintf(`{"order": %d}`, i) }
