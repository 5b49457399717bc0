package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequestLogKeepsTheLastRequestsInOrder(t *testing.T) {
	b, err := New()
	require.NoError(t, err)
	defer b.Close()
	total := maxRequestLog + 2*requestLogBlock + 7
	for i := range total {
		b.reqLog.add(RequestRecord{Version: int16(i % 30000), ClientID: "c"})
	}
	got := b.Requests()
	require.Len(t, got, maxRequestLog)
	for i, r := range got {
		if want := int16((total - maxRequestLog + i) % 30000); r.Version != want {
			t.Fatalf("record %d has version %d, want %d", i, r.Version, want)
		}
	}

	b.ResetRequests()
	assert.Empty(t, b.Requests())
	b.reqLog.add(RequestRecord{Version: 1})
	assert.Len(t, b.Requests(), 1)
}
