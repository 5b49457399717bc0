package log

import (
	"testing"

	"github.com/vastfake/vastfake/internal/testutil"
)

// TestTimeComesFromTheCaller: the log never reads the wall clock: the
// broker passes the time in (AppendOptions.Now, retention's now), from its
// clock.
func TestTimeComesFromTheCaller(t *testing.T) {
	t.Parallel()
	testutil.NoWallClock(t, ".")
}
