package e2e_test

// Compaction with transactions through real clients: kgo transactional
// producers, compaction on demand, and read_committed and read_uncommitted
// consumers, at one and three brokers; the first reproduction runs against
// kfake too.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/fixtures"
)

// compactTarget is a broker with a compacted topic and a way to compact
// it now.
type compactTarget struct {
	addr    string
	compact func()
}

// vastfakeTarget starts vastfake in the kafka profile with brokers brokers
// and topic compacted with configs.
func vastfakeTarget(t *testing.T, brokers int, topic string, partitions int32, configs ...string) compactTarget {
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Brokers(brokers),
		fixtures.Topic(topic, partitions, append([]string{"cleanup.policy", "compact"}, configs...)...))
	return compactTarget{addr: k.Addr(), compact: func() { k.Compact(topic) }}
}

// kfakeTarget starts kfake with the same topic.
func kfakeTarget(t *testing.T, topic string, partitions int32) compactTarget {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	adm := kadm.NewClient(txnClient(t, c.ListenAddrs()[0]))
	resp, err := adm.CreateTopic(ctxT(t), partitions, 1, map[string]*string{"cleanup.policy": kgoStr("compact")}, topic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	return compactTarget{addr: c.ListenAddrs()[0], compact: c.Compact}
}

func kgoStr(s string) *string { return &s }

// readThrough appends a sentinel record to each of the topic's partitions,
// then reads them all from the start at an isolation level until it has
// read every sentinel, as a consumer would, and returns the records before
// the sentinels. It fails if a partition's offsets do not increase.
func readThrough(t *testing.T, addr, topic string, partitions int32, committed bool) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t)
	plain := txnClient(t, addr)
	for p := range partitions {
		require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte("~end"), Value: []byte("~end")}).FirstErr())
	}
	return consume(t, addr, topic, partitions, committed, nil)
}

// consume reads topic from the start at an isolation level, with opts,
// until it has read a sentinel ("~end") in every partition, and returns
// the other records; each record goes to seen too when it is set. Offsets
// must increase in each partition.
func consume(t *testing.T, addr, topic string, partitions int32, committed bool, seen func(*kgo.Record), opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	level := kgo.ReadUncommitted()
	if committed {
		level = kgo.ReadCommitted()
	}
	cl := txnClient(t, addr, append([]kgo.Opt{kgo.FetchIsolationLevel(level),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var out []*kgo.Record
	last := map[int32]int64{}
	ended := map[int32]bool{}
	for len(ended) < int(partitions) {
		fs := cl.PollFetches(ctxT(t))
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) {
			if prev, ok := last[r.Partition]; ok {
				require.Greater(t, r.Offset, prev, "offsets go forward in partition %d", r.Partition)
			}
			last[r.Partition] = r.Offset
			if seen != nil {
				seen(r)
			}
			if string(r.Key) == "~end" {
				ended[r.Partition] = true
				return
			}
			out = append(out, r)
		})
	}
	return out
}

// latest returns each key's last value in records ("<nil>" for a
// tombstone).
func latest(records []*kgo.Record) map[string]string {
	out := map[string]string{}
	for _, r := range records {
		v := string(r.Value)
		if r.Value == nil {
			v = "<nil>"
		}
		out[string(r.Key)] = v
	}
	return out
}

func valuesOfRecords(records []*kgo.Record) []string {
	var out []string
	for _, r := range records {
		out = append(out, string(r.Key)+"="+string(r.Value))
	}
	return out
}

// TestCompactionKeepsACommittedValueOverAnAbortedOne is the first way
// compaction lost committed data: a key's committed value, then a
// transaction writing the same key that aborts; compacting must keep the
// committed value (and may remove the aborted one), as Kafka's cleaner
// does. kfake, which also cleans aborted records, must agree.
func TestCompactionKeepsACommittedValueOverAnAbortedOne(t *testing.T) {
	t.Parallel()
	targets := map[string]func(t *testing.T) compactTarget{
		"1 broker":  func(t *testing.T) compactTarget { return vastfakeTarget(t, 1, "accounts", 1) },
		"3 brokers": func(t *testing.T) compactTarget { return vastfakeTarget(t, 3, "accounts", 1) },
		"kfake":     func(t *testing.T) compactTarget { return kfakeTarget(t, "accounts", 1) },
	}
	for name, start := range targets {
		t.Run(name, func(t *testing.T) {
			target := start(t)
			ctx := ctxT(t)
			p := txnClient(t, target.addr, kgo.TransactionalID("accounts-writer"))
			rec := func(v string) *kgo.Record {
				return &kgo.Record{Topic: "accounts", Partition: 0, Key: []byte("alice"), Value: []byte(v)}
			}
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.ProduceSync(ctx, rec("committed")).FirstErr())
			require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.ProduceSync(ctx, rec("aborted")).FirstErr())
			require.NoError(t, p.EndTransaction(ctx, kgo.TryAbort))

			target.compact()
			assert.Equal(t, []string{"alice=committed"}, valuesOfRecords(readThrough(t, target.addr, "accounts", 1, true)))
			assert.Equal(t, []string{"alice=committed"}, valuesOfRecords(readThrough(t, target.addr, "accounts", 1, false)),
				"the aborted record is cleaned away")
		})
	}
}

// TestCompactionKeepsACommittedValueOverAnOpenTransaction is the second
// way: the same key written in a transaction still open when compaction
// runs, aborted afterwards. Compaction stops at the open transaction, so
// the committed value stays; after the abort the next compaction removes
// the aborted record and keeps the committed one. (kfake compacts past an
// open transaction and loses the committed value here, so it is not a
// reference for this case.)
func TestCompactionKeepsACommittedValueOverAnOpenTransaction(t *testing.T) {
	t.Parallel()
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprint(brokers, " brokers"), func(t *testing.T) {
			target := vastfakeTarget(t, brokers, "accounts", 1)
			ctx := ctxT(t)
			p := txnClient(t, target.addr, kgo.TransactionalID("accounts-writer"))
			plain := txnClient(t, target.addr)
			rec := func(key, v string) *kgo.Record {
				return &kgo.Record{Topic: "accounts", Partition: 0, Key: []byte(key), Value: []byte(v)}
			}
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.ProduceSync(ctx, rec("alice", "committed")).FirstErr())
			require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.ProduceSync(ctx, rec("alice", "open")).FirstErr())
			require.NoError(t, plain.ProduceSync(ctx, rec("bob", "b1")).FirstErr())
			require.NoError(t, plain.ProduceSync(ctx, rec("bob", "b2")).FirstErr())

			target.compact() // with the transaction open
			assert.Equal(t, int64(2), listEnd(t, target.addr, "accounts", 1), "read_committed still ends at the open transaction")
			require.NoError(t, p.EndTransaction(ctx, kgo.TryAbort))
			assert.Equal(t, map[string]string{"alice": "committed", "bob": "b2"}, latest(readThrough(t, target.addr, "accounts", 1, true)))

			target.compact()
			target.compact()
			committed := readThrough(t, target.addr, "accounts", 1, true)
			assert.Equal(t, map[string]string{"alice": "committed", "bob": "b2"}, latest(committed))
			uncommitted := readThrough(t, target.addr, "accounts", 1, false)
			for _, r := range uncommitted {
				assert.NotEqual(t, "open", string(r.Value), "the aborted record was cleaned")
			}
			assert.Equal(t, map[string]string{"alice": "committed", "bob": "b2"}, latest(uncommitted))
		})
	}
}

// TestCompactionUnderTransactionalLoad: 20 keys with committed values are
// rewritten again and again by transactions that commit (one producer)
// and that abort (two producers), and by plain producers on other keys,
// while compactions run and a read_committed consumer pages through the
// topic in small fetches. The consumer never sees an aborted value nor an
// offset going backwards, and afterwards every key reads as its last
// committed value at both isolation levels, none lost.
func TestCompactionUnderTransactionalLoad(t *testing.T) {
	t.Parallel()
	for _, brokers := range []int{1, 3} {
		t.Run(fmt.Sprint(brokers, " brokers"), func(t *testing.T) {
			const keys, rounds, partitions = 20, 15, 3
			target := vastfakeTarget(t, brokers, "balances", partitions, "delete.retention.ms", "0")
			ctx := ctxT(t)
			key := func(i int) string { return fmt.Sprintf("key-%02d", i) }
			writeAll := func(p *kgo.Client, commit bool, value func(i int) string) {
				require.NoError(t, p.BeginTransaction())
				for i := range keys {
					p.Produce(ctx, &kgo.Record{Topic: "balances", Key: []byte(key(i)), Value: []byte(value(i))}, nil)
				}
				require.NoError(t, p.Flush(ctx))
				require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
			}
			committer := txnClient(t, target.addr, kgo.TransactionalID("committer"), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
			writeAll(committer, true, func(i int) string { return fmt.Sprintf("committed-0-%d", i) })

			var mu sync.Mutex
			var bad []string
			readerDone := make(chan []*kgo.Record, 1)
			loadCtx, stopLoad := context.WithCancel(ctx)
			go func() { // the paging reader: small fetches through the whole run
				recs := consume(t, target.addr, "balances", partitions, true, func(r *kgo.Record) {
					if strings.HasPrefix(string(r.Value), "aborted") {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s@%d/%d", r.Value, r.Partition, r.Offset))
						mu.Unlock()
					}
				}, kgo.FetchMaxPartitionBytes(512), kgo.FetchMaxBytes(512))
				readerDone <- recs
			}()
			var wg sync.WaitGroup
			var abortedTxns, compactions atomic.Int64
			for a := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := txnClient(t, target.addr, kgo.TransactionalID(fmt.Sprint("aborter-", a)), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
					for r := 0; loadCtx.Err() == nil && r < 100; r++ {
						writeAll(p, false, func(i int) string { return fmt.Sprintf("aborted-%d-%d-%d", a, r, i) })
						abortedTxns.Add(1)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				plain := txnClient(t, target.addr)
				for n := 0; loadCtx.Err() == nil && n < 1000; n++ {
					if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "balances", Key: []byte(fmt.Sprint("noise-", n%7)), Value: []byte("noise")}).FirstErr(); err != nil {
						t.Error(err)
						return
					}
				}
			}()
			compacting := make(chan struct{})
			go func() {
				defer close(compacting)
				for loadCtx.Err() == nil {
					target.compact()
					compactions.Add(1)
				}
			}()
			for r := 1; r <= rounds; r++ {
				writeAll(committer, true, func(i int) string { return fmt.Sprintf("committed-%d-%d", r, i) })
			}
			stopLoad()
			wg.Wait()
			<-compacting
			t.Logf("%d aborted transactions and %d compactions during the load", abortedTxns.Load(), compactions.Load())
			require.Positive(t, abortedTxns.Load())
			require.Positive(t, compactions.Load())
			target.compact()
			target.compact()
			target.compact()

			want := map[string]string{}
			for i := range keys {
				want[key(i)] = fmt.Sprintf("committed-%d-%d", rounds, i)
			}
			for _, committed := range []bool{true, false} {
				got := latest(readThrough(t, target.addr, "balances", partitions, committed))
				for i := range keys {
					assert.Equal(t, want[key(i)], got[key(i)], "%s at read_committed=%v", key(i), committed)
				}
				for k, v := range got {
					assert.False(t, strings.HasPrefix(v, "aborted"), "%s=%s at read_committed=%v", k, v, committed)
				}
			}
			// The paging reader finishes on the sentinels just written.
			recs := <-readerDone
			got := latest(recs)
			for i := range keys {
				assert.Equal(t, want[key(i)], got[key(i)], "the paging reader's last value of %s", key(i))
			}
			mu.Lock()
			assert.Empty(t, bad, "aborted values seen at read_committed")
			mu.Unlock()
		})
	}
}

// TestCompactionWithZeroDeleteRetention: with delete.retention.ms=0,
// repeated compactions remove tombstones and markers as soon as Kafka's
// cleaner may (a marker once nothing of its transaction is left), and
// nothing committed with them.
func TestCompactionWithZeroDeleteRetention(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.ManualClock(time.Now()),
		fixtures.Topic("users", 1, "cleanup.policy", "compact", "delete.retention.ms", "0"))
	ctx := ctxT(t)
	p := k.TransactionalClient("users-writer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := func(key, v string) *kgo.Record {
		r := &kgo.Record{Topic: "users", Partition: 0, Key: []byte(key), Value: []byte(v)}
		if v == "<nil>" {
			r.Value = nil
		}
		return r
	}
	txn := func(commit bool, recs ...*kgo.Record) {
		require.NoError(t, p.BeginTransaction())
		for _, r := range recs {
			require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	txn(true, rec("ann", "a1"), rec("bob", "b1"))
	txn(false, rec("ann", "lost"), rec("bob", "<nil>"))
	txn(true, rec("bob", "<nil>"), rec("cy", "c1"))
	txn(false, rec("cy", "lost"))
	k.ProduceRecords(rec("dee", "d1")) // the tail
	for range 4 {
		k.Compact("users")
	}
	want := []string{"0 ann=a1", "2 commit", "7 cy=c1", "8 commit", "11 dee=d1"}
	assert.Equal(t, want, readLog(t, k, "users", false).Records,
		"bob's tombstone, the aborted records and the abort markers are gone; the commit markers of what is left stay")
	assert.Equal(t, want, readLog(t, k, "users", true).Records)
	assert.Equal(t, int64(12), k.EndOffset("users", 0), "offsets keep their values")
	assert.Equal(t, map[string]string{"ann": "a1", "cy": "c1", "dee": "d1"}, latest(readThrough(t, k.Addr(), "users", 1, true)))
}
