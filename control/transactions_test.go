package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// TestTransactionsAndMarkers: GET /transactions shows each transactional id
// and its open transaction, live.json the open ones, and a partition's
// records show the markers that end transactions as markers, and each
// transactional record's fate.
func TestTransactionsAndMarkers(t *testing.T) {
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("ledger", 1))
	url := serve(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := k.TransactionalClient("ledger-writer", kgo.TransactionTimeout(time.Minute))
	run := func(commit bool, value string) {
		require.NoError(t, p.BeginTransaction())
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte(value)}).FirstErr())
		if value != "open" {
			require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
		}
	}
	run(true, "kept")
	run(false, "dropped")
	run(true, "open")

	var txns []map[string]any
	require.Equal(t, 200, call(t, "GET", url+"/transactions", nil, &txns))
	require.Len(t, txns, 1)
	assert.Equal(t, "ledger-writer", txns[0]["transactionalId"])
	assert.Equal(t, "Ongoing", txns[0]["state"])
	assert.Equal(t, float64(60000), txns[0]["timeoutMs"])
	assert.Equal(t, []any{map[string]any{"topic": "ledger", "partition": float64(0)}}, txns[0]["partitions"])
	assert.Equal(t, float64(1), txns[0]["committed"])
	assert.Equal(t, float64(1), txns[0]["aborted"])
	assert.NotNil(t, txns[0]["start"])

	var live struct {
		Transactions []map[string]any `json:"transactions"`
	}
	require.Equal(t, 200, call(t, "GET", url+"/live.json", nil, &live))
	require.Len(t, live.Transactions, 1, "live.json shows the open transaction")

	var recs []map[string]any
	require.Equal(t, 200, call(t, "GET", url+"/topics/ledger/partitions/0/records", nil, &recs))
	type row struct{ value, marker, txn string }
	var got []row
	for _, r := range recs {
		v, _ := r["value"].(string)
		m, _ := r["marker"].(string)
		x, _ := r["transaction"].(string)
		got = append(got, row{v, m, x})
		assert.Positive(t, r["producerId"], "transactional records and markers carry the producer id")
	}
	assert.Equal(t, []row{
		{"kept", "", "committed"}, {"", "commit", ""},
		{"dropped", "", "aborted"}, {"", "abort", ""},
		{"open", "", "open"},
	}, got)

	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	require.Equal(t, 200, call(t, "GET", url+"/transactions?state=open", nil, &txns))
	assert.Empty(t, txns)
	var one map[string]any
	require.Equal(t, 200, call(t, "GET", url+"/transactions/ledger-writer", nil, &one))
	assert.Equal(t, "CompleteCommit", one["state"])
	assert.Nil(t, one["start"], "no transaction open")
	assert.Equal(t, 404, call(t, "GET", url+"/transactions/nobody", nil, nil))
	assert.Equal(t, 400, call(t, "GET", url+"/transactions?state=closed", nil, nil))

	// The fixtures read the same state.
	k.AssertTransaction("ledger-writer", "committed")
	k.AssertCommittedRecords("ledger", 0, "kept", "open")
	k.AssertRecords("ledger", 0, "kept", "dropped", "open")
}
