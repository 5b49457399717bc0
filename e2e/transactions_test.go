package e2e_test

// Transactions (kafka and audit profiles): a transactional producer's
// commit and abort, what read_committed and read_uncommitted consumers see,
// consume-transform-produce with offsets committed in the transaction,
// fencing, the transaction timeout on the broker's clock, and bad input.
// Where a scenario runs against kfake too, the two must agree.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/fixtures"
)

// txnBrokers returns the brokers a transaction scenario runs against: a
// vastfake in the kafka profile with topics made, and kfake with the same
// topics, by name, each as a seed address.
func txnBrokers(t *testing.T, topics ...string) map[string]string {
	t.Helper()
	opts := []fixtures.Option{fixtures.Profile("kafka")}
	for _, name := range topics {
		opts = append(opts, fixtures.Topic(name, 2))
	}
	k := fixtures.Start(t, opts...)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics...))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return map[string]string{"vastfake": k.Addr(), "kfake": c.ListenAddrs()[0]}
}

// produceInTxn runs one transaction of values to topic's partition 0 and
// ends it with commit or abort.
func produceInTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, cl.BeginTransaction())
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).FirstErr())
	}
	require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// readAll consumes topic's partition 0 from the start until it has read up
// to end (exclusive; data records only) and returns the values, at the
// isolation level given.
func readAll(t *testing.T, addr, topic string, committed bool, want int) []string {
	t.Helper()
	level := kgo.ReadUncommitted()
	if committed {
		level = kgo.ReadCommitted()
	}
	cl := txnClient(t, addr, kgo.FetchIsolationLevel(level),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Second)
	defer cancel()
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		require.NoError(t, fs.Err())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestTransactionCommitAndAbort: an aborted transaction's records are
// never seen by read_committed consumers and are by read_uncommitted ones;
// the committed ones are seen by both, and read_committed's end offset
// stops at an open transaction.
func TestTransactionCommitAndAbort(t *testing.T) {
	t.Parallel()
	for name, addr := range txnBrokers(t, "txn-out") {
		t.Run(name, func(t *testing.T) {
			p := txnClient(t, addr, kgo.TransactionalID("commit-abort"))
			produceInTxn(t, p, "txn-out", false, "a1", "a2", "a3")
			produceInTxn(t, p, "txn-out", true, "c1", "c2")
			produceInTxn(t, p, "txn-out", false, "a4")
			produceInTxn(t, p, "txn-out", true, "c3")

			assert.Equal(t, []string{"c1", "c2", "c3"}, readAll(t, addr, "txn-out", true, 3))
			assert.Equal(t, []string{"a1", "a2", "a3", "c1", "c2", "a4", "c3"}, readAll(t, addr, "txn-out", false, 7))

			// Data 7 records + 4 markers: the end offset is 11 at both levels.
			adm := kadm.NewClient(txnClient(t, addr))
			ends, err := adm.ListEndOffsets(ctxT(t), "txn-out")
			require.NoError(t, err)
			end, _ := ends.Lookup("txn-out", 0)
			assert.Equal(t, int64(11), end.Offset, "markers take offsets")

			// An open transaction holds read_committed's end back.
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.ProduceSync(ctxT(t), &kgo.Record{Topic: "txn-out", Partition: 0, Value: []byte("open")}).FirstErr())
			committedEnd := listEnd(t, addr, "txn-out", 1)
			uncommittedEnd := listEnd(t, addr, "txn-out", 0)
			assert.Equal(t, int64(11), committedEnd, "read_committed end stops at the open transaction")
			assert.Equal(t, int64(12), uncommittedEnd)
			{ // Kafka lists every producer the partition remembers, kfake those with a transaction open: here both list this one
				producers, err := adm.DescribeProducers(ctxT(t), kadm.TopicsSet{"txn-out": {0: {}}})
				require.NoError(t, err)
				d := producers["txn-out"].Partitions[0]
				require.NoError(t, d.Err)
				require.Len(t, d.ActiveProducers, 1)
				for _, ap := range d.ActiveProducers {
					assert.Equal(t, int64(11), ap.CurrentTxnStartOffset, "the open transaction's first offset")
				}
			}
			require.NoError(t, p.EndTransaction(ctxT(t), kgo.TryCommit))
			assert.Equal(t, int64(13), listEnd(t, addr, "txn-out", 1))
		})
	}
}

// TestTransactionConsumeTransformProduce runs kgo's GroupTransactSession:
// each input record is copied to the output topic in a transaction that
// also commits the group's offset; the first transaction aborts, so its
// output is never seen by read_committed and its input is read again.
func TestTransactionConsumeTransformProduce(t *testing.T) {
	t.Parallel()
	for name, addr := range txnBrokers(t, "etl-in", "etl-out") {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			in := txnClient(t, addr)
			for i := range 10 {
				require.NoError(t, in.ProduceSync(ctx, &kgo.Record{Topic: "etl-in", Partition: 0, Value: []byte("v" + strconv.Itoa(i))}).FirstErr())
			}
			sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("etl"),
				kgo.ConsumerGroup("etl-group"), kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			require.NoError(t, err)
			defer sess.Close()
			copied, rounds := 0, 0
			for copied < 10 {
				fs := sess.PollFetches(ctx)
				require.NoError(t, fs.Err())
				require.NoError(t, sess.Begin())
				n := 0
				fs.EachRecord(func(r *kgo.Record) {
					n++
					sess.Produce(ctx, &kgo.Record{Topic: "etl-out", Partition: 0, Value: append([]byte("out-"), r.Value...)}, nil)
				})
				commit := rounds > 0
				committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
				require.NoError(t, err)
				if commit && committed {
					copied += n
				}
				if !commit {
					// An abort leaves the group at its committed offset:
					// the session rewinds to it and reads the records again.
					require.Positive(t, n)
				}
				rounds++
			}
			want := make([]string, 10)
			for i := range want {
				want[i] = "out-v" + strconv.Itoa(i)
			}
			assert.Equal(t, want, readAll(t, addr, "etl-out", true, 10))
			offs, err := kadm.NewClient(txnClient(t, addr)).FetchOffsets(ctx, "etl-group")
			require.NoError(t, err)
			o, ok := offs.Lookup("etl-in", 0)
			require.True(t, ok)
			assert.Equal(t, int64(10), o.At, "the group's offset was committed in the transaction")
		})
	}
}

// TestTransactionFencing: a second producer with the same transactional id
// fences the first: the first's open transaction is aborted, its writes
// get INVALID_PRODUCER_EPOCH and its commit PRODUCER_FENCED, and only the
// new producer's records are committed.
func TestTransactionFencing(t *testing.T) {
	t.Parallel()
	for name, addr := range txnBrokers(t, "fence") {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			zombie := txnClient(t, addr, kgo.TransactionalID("fenced-id"), kgo.RecordRetries(0))
			require.NoError(t, zombie.BeginTransaction())
			require.NoError(t, zombie.ProduceSync(ctx, &kgo.Record{Topic: "fence", Partition: 0, Value: []byte("zombie-1")}).FirstErr())

			fresh := txnClient(t, addr, kgo.TransactionalID("fenced-id"))
			produceInTxn(t, fresh, "fence", true, "fresh-1")

			err := zombie.ProduceSync(ctx, &kgo.Record{Topic: "fence", Partition: 0, Value: []byte("zombie-2")}).FirstErr()
			require.Error(t, err)
			assert.True(t, errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced), "zombie write: %v", err)
			err = zombie.EndTransaction(ctx, kgo.TryCommit)
			require.Error(t, err, "the zombie cannot commit")

			assert.Equal(t, []string{"fresh-1"}, readAll(t, addr, "fence", true, 1))
		})
	}
}

// TestTransactionTimeout: a transaction open past its
// transaction.timeout.ms is aborted by the broker at that moment of its
// clock: read_committed consumers never see its records, the producer's
// epoch is bumped so its commit is refused, and the id can start again.
func TestTransactionTimeout(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("slow", 1), fixtures.ManualClock(time.Now()))
	ctx := ctxT(t)
	p := txnClient(t, k.Addr(), kgo.TransactionalID("slow-id"), kgo.TransactionTimeout(10*time.Second), kgo.RecordRetries(0))
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "slow", Value: []byte("late")}).FirstErr())

	k.Advance(9 * time.Second)
	info, ok := k.Broker().Transaction("slow-id")
	require.True(t, ok)
	assert.Equal(t, "Ongoing", info.State.String(), "not yet timed out")
	assert.Equal(t, int64(0), listEnd(t, k.Addr(), "slow", 1))

	k.Advance(time.Second)
	info, _ = k.Broker().Transaction("slow-id")
	assert.Equal(t, "CompleteAbort", info.State.String())
	assert.Equal(t, 1, info.TimedOut)
	assert.Equal(t, int64(2), listEnd(t, k.Addr(), "slow", 1), "the abort marker ends the transaction")

	err := p.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "a timed-out transaction cannot commit")

	again := txnClient(t, k.Addr(), kgo.TransactionalID("slow-id"))
	produceInTxn(t, again, "slow", true, "on-time")
	assert.Equal(t, []string{"on-time"}, readAll(t, k.Addr(), "slow", true, 1))
}

// txnConn is a raw connection for hand-driven transaction requests.
type txnConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func (c *txnConn) do(version int16, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.corr++
	resp := req.ResponseKind()
	roundTrip(c.t, c.c, version, req, resp, c.corr)
	return resp
}

func (c *txnConn) initProducer(id string, version int16) (int64, int16) {
	c.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	resp := c.do(version, req).(*kmsg.InitProducerIDResponse)
	require.Zero(c.t, resp.ErrorCode, "InitProducerId: %v", kerr.ErrorForCode(resp.ErrorCode))
	return resp.ProducerID, resp.ProducerEpoch
}

func (c *txnConn) addPartitions(version int16, id string, pid int64, epoch int16, topic string, partitions ...int32) []int16 {
	c.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	resp := c.do(version, req).(*kmsg.AddPartitionsToTxnResponse)
	var codes []int16
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

func (c *txnConn) endTxn(version int16, id string, pid int64, epoch int16, commit bool) int16 {
	c.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return c.do(version, req).(*kmsg.EndTxnResponse).ErrorCode
}

// TestTransactionBadInput: each malformed or out-of-order transaction
// request gets Kafka's error code on one connection, which stays usable,
// and nothing committed is lost.
func TestTransactionBadInput(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Topic("bad-txn", 2))
	k.Produce("bad-txn", 0, "kept")
	c := &txnConn{t: t, c: dialRaw(t, k.Addr())}
	pid, epoch := c.initProducer("bad", 4)

	assert.Equal(t, kerr.InvalidTxnState.Code, c.endTxn(3, "bad", pid, epoch, true), "EndTxn without a transaction")
	assert.Equal(t, kerr.InvalidTxnState.Code, c.endTxn(3, "bad", pid, epoch, false), "abort without a transaction")
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, c.endTxn(3, "unknown-id", pid, epoch, true), "unknown transactional id")
	assert.Equal(t, kerr.InvalidProducerIDMapping.Code, c.endTxn(3, "bad", pid+1000, epoch, true), "another producer id")

	assert.Equal(t, []int16{kerr.UnknownTopicOrPartition.Code}, c.addPartitions(3, "bad", pid, epoch, "no-such-topic", 0))
	assert.Equal(t, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code},
		c.addPartitions(3, "bad", pid, epoch, "bad-txn", 0, 7), "one unknown partition: none is added")
	assert.Equal(t, kerr.InvalidTxnState.Code, c.endTxn(3, "bad", pid, epoch, true), "nothing was added")

	// A stale epoch: PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for
	// versions older than that code.
	newPid, newEpoch := c.initProducer("bad", 4)
	require.Equal(t, pid, newPid)
	require.Equal(t, epoch+1, newEpoch)
	assert.Equal(t, []int16{kerr.ProducerFenced.Code}, c.addPartitions(3, "bad", pid, epoch, "bad-txn", 0))
	assert.Equal(t, []int16{kerr.InvalidProducerEpoch.Code}, c.addPartitions(1, "bad", pid, epoch, "bad-txn", 0))
	assert.Equal(t, kerr.ProducerFenced.Code, c.endTxn(2, "bad", pid, epoch, true))
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, c.endTxn(1, "bad", pid, epoch, true))

	// A transactional batch for a partition not in the transaction, from a
	// client of the older protocol (Produce v10, which cannot add it), and
	// one in a request without the transactional id.
	w := &txnWire{t: t, c: c.c, corr: c.corr, id: "bad", pid: newPid}
	assert.Equal(t, kerr.InvalidTxnState.Code, w.produce(10, "bad-txn", newEpoch, 0), "write outside the transaction")
	c.corr = w.corr
	resp := rawProduce(t, k.Client(), "bad-txn", 1, func(rb *kmsg.RecordBatch) {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = newPid, newEpoch, 0
		rb.Attributes |= 0x10 // transactional
	})
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, resp.ErrorCode, "a transactional batch without the transactional id")

	// Transaction timeouts outside 1 ms .. transaction.max.timeout.ms.
	for _, ms := range []int32{0, -1, 15*60*1000 + 1} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr("bad-timeout"), ms
		assert.Equal(t, kerr.InvalidTransactionTimeout.Code, c.do(4, req).(*kmsg.InitProducerIDResponse).ErrorCode, "timeout %d", ms)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(""), 1000
	assert.Equal(t, kerr.InvalidRequest.Code, c.do(4, req).(*kmsg.InitProducerIDResponse).ErrorCode, "empty transactional id")

	// DescribeProducers for a topic that does not exist.
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "no-such-topic", []int32{0}
	dp.Topics = append(dp.Topics, dt)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, c.do(0, dp).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode)

	// The connection still serves, and the record produced before is there.
	assert.Equal(t, []int16{0}, c.addPartitions(3, "bad", newPid, newEpoch, "bad-txn", 0))
	assert.Equal(t, int16(0), c.endTxn(3, "bad", newPid, newEpoch, false))
	assert.Equal(t, int16(0), c.endTxn(3, "bad", newPid, newEpoch, false), "a retried abort")
	assert.Equal(t, kerr.InvalidTxnState.Code, c.endTxn(3, "bad", newPid, newEpoch, true), "commit after abort")
	assert.Equal(t, []string{"kept"}, readAll(t, k.Addr(), "bad-txn", true, 1))
}

// TestTransactionsAudited: in the audit profile a transactional app runs
// unchanged, as on Kafka, and its transactional requests are findings of
// rule NoIdempotence with advice in kgo's terms.
func TestTransactionsAudited(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("audited", 1))
	p := txnClient(t, k.Addr(), kgo.TransactionalID("audited-app"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceInTxn(t, p, "audited", false, "dropped")
	produceInTxn(t, p, "audited", true, "kept")
	assert.Equal(t, []string{"kept"}, readAll(t, k.Addr(), "audited", true, 1))

	assert.Empty(t, k.Refusals(), "audit mode refuses nothing")
	var txnRequests int64
	sent := map[kmsg.Key]int64{}
	for _, rec := range k.Broker().Requests() {
		switch rec.API {
		case kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.EndTxn:
			txnRequests++
			sent[rec.API]++
			assert.Zero(t, rec.ErrorCode, "%s is served", rec.API)
			assert.NotEmpty(t, rec.Finding, "%s is a finding", rec.API)
		}
	}
	assert.GreaterOrEqual(t, txnRequests, int64(5), "InitProducerId, two AddPartitionsToTxn, two EndTxn")
	// One row per rule, client and API, each counting its own requests,
	// with advice true for a transactional kgo app: it fails on VAST.
	byAPI := map[string]int64{}
	for _, f := range k.Findings() {
		if f.Rule != "NoIdempotence" {
			continue
		}
		assert.Equal(t, "kgo", f.ClientSoftware)
		byAPI[f.API] += f.Count
		if f.Topic == "" {
			assert.Contains(t, f.Advice, "kgo.TransactionalID", f.API)
			assert.Contains(t, f.Advice, "fails at BeginTransaction", f.API)
			assert.NotContains(t, f.Advice, "falls back", f.API)
		}
	}
	// kgo learns the broker's transaction.version after its first
	// transaction has begun, so it runs that one on the older protocol and
	// then reloads its producer id (a second InitProducerId) to run the
	// next on transactions v2: each request is one finding.
	assert.Equal(t, sent[kmsg.InitProducerID], byAPI["InitProducerID"], "findings: %v", byAPI)
	assert.Equal(t, int64(2), byAPI["EndTxn"], "findings: %v", byAPI)
	assert.GreaterOrEqual(t, byAPI["AddPartitionsToTxn"], int64(1), "findings: %v", byAPI)
	assert.GreaterOrEqual(t, byAPI["FindCoordinator"], int64(1), "findings: %v", byAPI)
	md := k.Broker().AuditReport().Markdown()
	assert.Contains(t, md, "| NoIdempotence | kgo")
	assert.Contains(t, md, "| EndTxn |")
}

// TestIdempotenceAdviceKgo: an idempotent (not transactional) kgo
// producer is told it falls back quietly on VAST, which is true for it.
func TestIdempotenceAdviceKgo(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Audit(), fixtures.Topic("idem", 1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "idem", Value: []byte("v")}).FirstErr())
	var saw bool
	for _, f := range k.Findings() {
		if f.Rule == "NoIdempotence" {
			saw = true
			assert.Contains(t, f.Advice, "kgo.DisableIdempotentWrite()", f.API)
			assert.Contains(t, f.Advice, "falls back quietly", f.API)
		}
	}
	assert.True(t, saw, "findings: %v", findingKeys(k.Findings()))
}

// TestTransactionsRefusedOnVAST: VAST has no transactions; the VAST profile
// refuses a transactional producer by the documented rule.
func TestTransactionsRefusedOnVAST(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Topic("vast-txn", 1))
	p := txnClient(t, k.Addr(), kgo.TransactionalID("vast-app"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	// kgo finds the transaction coordinator when the transaction begins.
	err := p.BeginTransaction()
	require.ErrorIs(t, err, kerr.TransactionalIDAuthorizationFailed)
	k.WaitRefused("NoIdempotence")
	assert.Empty(t, k.Broker().Transactions())
	// The refusal says what to do, not only which rule refused.
	refusals := k.Refusals()
	require.NotEmpty(t, refusals)
	assert.Contains(t, refusals[0].Message, "(rule NoIdempotence): remove transactional.id, or run -profile audit")
}

// TestTransactionsOnSeveralBrokers: with three broker ids in the kafka
// profile a transactional id has one coordinator, which FindCoordinator
// names and which alone serves the id (the others answer NOT_COORDINATOR);
// kgo's consume-transform-produce runs through it, and kadm's
// DescribeTransactions and ListTransactions (which asks every broker) see
// each id once.
func TestTransactionsOnSeveralBrokers(t *testing.T) {
	t.Parallel()
	k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.Brokers(3), fixtures.Topic("multi", 3))
	ctx := ctxT(t)
	ids := []string{"txn-a", "txn-b", "txn-c", "txn-d"}
	coordinators := map[int32]bool{}
	for _, id := range ids {
		p := k.TransactionalClient(id, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		require.NoError(t, p.BeginTransaction())
		for part := range int32(3) {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "multi", Partition: part, Value: []byte(id)}).FirstErr())
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
		coordinators[k.Broker().CoordinatorOf(id)] = true
	}
	require.Greater(t, len(coordinators), 1, "the ids spread over the brokers")

	adm := k.Admin()
	described, err := adm.DescribeTransactions(ctx, ids...)
	require.NoError(t, err)
	for _, id := range ids {
		d, ok := described[id]
		require.True(t, ok, id)
		require.NoError(t, d.Err)
		assert.Equal(t, "CompleteCommit", d.State, id)
		assert.Equal(t, k.Broker().CoordinatorOf(id), d.Coordinator, id)
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, ids, listed.TransactionalIDs(), "each id once, from its coordinator")

	// DescribeProducers goes to each partition's leader: every id's
	// producer wrote every partition, none has a transaction open.
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"multi": {0: {}, 1: {}, 2: {}}})
	require.NoError(t, err)
	producers.EachPartition(func(p kadm.DescribedProducersPartition) {
		require.NoError(t, p.Err, "partition %d", p.Partition)
		assert.Equal(t, k.Broker().LeaderOf("multi", p.Partition), p.Leader)
		assert.Len(t, p.ActiveProducers, len(ids), "partition %d", p.Partition)
		for _, ap := range p.ActiveProducers {
			assert.Equal(t, int64(-1), ap.CurrentTxnStartOffset)
			assert.Equal(t, int32(0), ap.LastSequence, "one record per producer and partition")
		}
	})

	// The other brokers refuse the id's requests.
	id := ids[0]
	for _, broker := range k.Broker().BrokerIDs() {
		if broker == k.Broker().CoordinatorOf(id) {
			continue
		}
		c := &txnConn{t: t, c: dialRaw(t, k.Broker().BrokerAddr(broker))}
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		resp := c.do(4, req).(*kmsg.InitProducerIDResponse)
		assert.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode, "broker %d", broker)
		assert.Equal(t, int64(-1), resp.ProducerID)
		assert.Equal(t, kerr.NotCoordinator.Code, c.endTxn(3, id, 1, 0, true), "broker %d", broker)
	}

	for part := range int32(3) {
		k.AssertCommittedRecords("multi", part, ids...)
	}
}
