//go:build heavy

package control_test

// The memory bounds of the control plane (docs/limits.md), measured on the
// live heap: heavy, so test.sh runs them apart (go test -tags heavy).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
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

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnreadDumpsHoldLittle fills a partition with 32 MiB of records and
// starts eight dumps of it (limit 10,000, all of it) whose clients read
// the headers and nothing more. Each answer is streamed, so the server
// holds one record and a small buffer per dump while the client does not
// read, not the answer: all eight together grow the heap by less than one
// dump's size (a heap profile shows about 0.5 MiB held by the handlers; the
// rest is other goroutines' noise). Before streaming they held 300 MB.
func TestUnreadDumpsHoldLittle(t *testing.T) {
	k := fixtures.Start(t, fixtures.Topic("dump", 1))
	url := serve(t, k)
	value := strings.Repeat("v", 10<<10)
	var recs []*kgo.Record
	for range 3200 {
		recs = append(recs, &kgo.Record{Topic: "dump", Value: []byte(value)})
	}
	for i := 0; i < len(recs); i += 90 {
		k.ProduceRecords(recs[i:min(i+90, len(recs))]...)
	}
	recs = nil

	before := heapInUse()
	var bodies []io.Closer
	for range 8 {
		resp, err := http.Get(url + "/topics/dump/partitions/0/records?limit=10000")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		bodies = append(bodies, resp.Body)
	}
	// The handlers write until the sockets' buffers are full, making
	// garbage as they go; what they hold once blocked is what counts.
	grown := int64(heapInUse()) - int64(before)
	for end := time.Now().Add(deadline); grown >= 32<<20 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond) // poll interval, not a wait for state
		grown = int64(heapInUse()) - int64(before)
	}
	for _, b := range bodies {
		b.Close()
	}
	t.Logf("heap grew by %d KiB with eight unread dumps of 32 MiB", grown>>10)
	assert.Less(t, grown, int64(32<<20), "eight unread dumps of 32 MiB hold less than one dump's size together")
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
	// The broker's clock stands still, so that no transaction reaches its
	// timeout while the others open: 400,000 partitions added take minutes
	// under the race detector on a loaded machine, hence the setup's own
	// deadline.
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("t", parts),
		fixtures.ManualClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)))
	url := serve(t, k)
	cl := k.Client()
	setup, cancelSetup := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelSetup()
	openTransactions(t, setup, cl, txns, "t", parts)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()

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
