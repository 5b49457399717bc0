package control_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// openTransactions opens n transactions, each of every partition of topic
// (which has parts partitions), through cl.
func openTransactions(t *testing.T, ctx context.Context, cl *kgo.Client, n int, topic string, parts int32) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				init := kmsg.NewPtrInitProducerIDRequest()
				init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(fmt.Sprintf("tx-%05d", i)), 60_000
				ir, err := init.RequestWith(ctx, cl)
				if err == nil && ir.ErrorCode != 0 {
					err = kerr.ErrorForCode(ir.ErrorCode)
				}
				if err != nil {
					errs <- err
					return
				}
				add := kmsg.NewPtrAddPartitionsToTxnRequest()
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = *init.TransactionalID, ir.ProducerID, ir.ProducerEpoch
				at := kmsg.NewAddPartitionsToTxnRequestTopic()
				at.Topic = topic
				for p := range parts {
					at.Partitions = append(at.Partitions, p)
				}
				add.Topics = append(add.Topics, at)
				if _, err := add.RequestWith(ctx, cl); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestUnreadTransactionListsHoldLittle: GET /transactions and /live.json
// walk the transactions one at a time, so sixteen readers that stop reading
// with 2,000 open transactions of 200 partitions each hold little (a copy of
// all of them per reader held 10 MiB each), and another client's
// OffsetCommit is answered while they are stalled.
func TestUnreadTransactionListsHoldLittle(t *testing.T) {
	const txns, parts = 2000, 200
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", parts))
	url := serve(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cl := k.Client()
	openTransactions(t, ctx, cl, txns, "t", parts)

	before := heapInUse()
	var bodies []io.Closer
	for _, path := range []string{"/transactions", "/live.json"} {
		for range 8 {
			resp, err := http.Get(url + path)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			bodies = append(bodies, resp.Body)
		}
	}
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 0, LeaderEpoch: -1})
	committed, err := kadm.NewClient(cl).CommitOffsets(ctx, "billing", offsets)
	require.NoError(t, err)
	require.NoError(t, committed.Error(), "another client's commit is answered while the lists are unread")

	grown := int64(heapInUse()) - int64(before)
	for end := time.Now().Add(deadline); grown >= 16<<20 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond) // poll interval, not a wait for state
		grown = int64(heapInUse()) - int64(before)
	}
	t.Logf("heap grew by %d KiB with sixteen unread lists of %d transactions × %d partitions", grown>>10, txns, parts)
	assert.Less(t, grown, int64(16<<20))
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
