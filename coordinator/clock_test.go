package coordinator

import (
	"testing"

	"github.com/vastfake/vastfake/internal/testutil"
)

// TestTimeComesFromTheClock: the coordinator reads time and waits only
// through its clock (Config.Clock), so a test's manual clock rules every
// session, rebalance and transaction timeout.
func TestTimeComesFromTheClock(t *testing.T) {
	t.Parallel()
	testutil.NoWallClock(t, ".")
}
