package control_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/fixtures"
)

// TestTransactionsAndMarkers: GET /transactions shows each transactional id
// and its open transaction, live.json the open ones, and a partition's
// records show the markers that end transactions as markers, and each
// transactional record's fate.
func TestTransactionsAndMarkers(t *testing.T) {
	t.Parallel()
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

// TestClientBytesThatAreNotUTF8: a transactional id, group name, client id
// and offset metadata that are not UTF-8 show in JSON as text (with U+FFFD
// where the bytes are not UTF-8) and, beside it, as base64 of the bytes
// themselves, so two ids that differ only there are told apart.
func TestClientBytesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", 1))
	url := serve(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	const txn, group, client, meta = "tx\xff", "g\xfe", "c\xfd", "m\xfc"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cl := k.Client(kgo.ClientID(client))
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(txn), 60_000
	ir, err := init.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, ir.ErrorCode)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = group, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Metadata = kmsg.StringPtr(meta)
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, cr.Topics[0].Partitions[0].ErrorCode)

	var txns []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/transactions", nil, &txns))
	require.Len(t, txns, 1)
	assert.Equal(t, "tx\uFFFD", txns[0]["transactionalId"])
	assert.Equal(t, b64(txn), txns[0]["transactionalIdBase64"])

	var groups []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/groups", nil, &groups))
	require.Len(t, groups, 1)
	assert.Equal(t, b64(group), groups[0]["nameBase64"])
	parts := groups[0]["partitions"].([]any)
	require.Len(t, parts, 1)
	assert.Equal(t, b64(meta), parts[0].(map[string]any)["metadataBase64"])

	var reqs []map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/requests?api=InitProducerId", nil, &reqs))
	require.NotEmpty(t, reqs)
	assert.Equal(t, b64(client), reqs[0]["clientIdBase64"])
	_, ok := reqs[0]["userBase64"]
	assert.False(t, ok, "UTF-8 strings have no base64 beside them")

	var live map[string]any
	require.Equal(t, http.StatusOK, call(t, "GET", url+"/live.json", nil, &live))
	assert.Equal(t, b64(group), live["groups"].([]any)[0].(map[string]any)["nameBase64"])
}
