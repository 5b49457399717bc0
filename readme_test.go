package vastfake_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeFirstTest keeps README's "Getting started" test the one that
// examples/gettingstarted compiles and runs, so that a newcomer copying it
// gets a passing test.
func TestReadmeFirstTest(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	example, err := os.ReadFile("examples/gettingstarted/billing_test.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), "```go\n"+string(example)+"```\n"),
		"README.md must quote examples/gettingstarted/billing_test.go verbatim in a go block")
}
