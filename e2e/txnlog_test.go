package e2e_test

// Every path that removes, moves or rewrites records, checked against
// transactions: compaction on demand and on its interval, retention by
// time, DeleteRecords, offset gaps, topic deletion and Reset each run with
// committed, aborted and open transactions on the same keys, and what
// read_committed and read_uncommitted readers get back (through kgo's own
// fetch processing) is compared with a small model of what Kafka keeps.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// kafkaLog models one partition of a Kafka log as its cleaner, retention
// and DeleteRecords leave it, one record per batch (as the tests produce
// them): what Kafka keeps, written from Kafka's rules, not from vastfake's
// code.
type kafkaLog struct {
	recs     []modelRec
	txns     []modelTxn
	hwm      int64
	logStart int64
	skip     int64 // offsets the next batch skips
	// deleteRetention is delete.retention.ms.
	deleteRetention int64
}

type modelRec struct {
	off        int64
	key, value string // value "<nil>" for a tombstone
	txn        int    // index in txns, -1 outside a transaction
	marker     bool   // a transaction marker; commit says which
	commit     bool
	ts         int64 // the batch's max timestamp, unix ms
	horizon    int64 // delete horizon, unix ms; 0 until set
}

type modelTxn struct {
	state string // "open", "commit" or "abort"
	first int64  // offset of its first record in the partition; -1 if none
}

func (m *kafkaLog) append(r modelRec) {
	r.off = m.hwm + m.skip
	m.skip = 0
	m.hwm = r.off + 1
	m.recs = append(m.recs, r)
}

// begin starts a transaction and returns its index.
func (m *kafkaLog) begin() int {
	m.txns = append(m.txns, modelTxn{state: "open", first: -1})
	return len(m.txns) - 1
}

func (m *kafkaLog) data(txn int, key, value string, ts int64) {
	if txn >= 0 && m.txns[txn].first < 0 {
		m.txns[txn].first = m.hwm + m.skip
	}
	m.append(modelRec{key: key, value: value, txn: txn, ts: ts})
}

// end ends a transaction; its marker is written only where it wrote.
func (m *kafkaLog) end(txn int, commit bool, ts int64) {
	m.txns[txn].state = map[bool]string{true: "commit", false: "abort"}[commit]
	if m.txns[txn].first >= 0 {
		m.append(modelRec{txn: txn, marker: true, commit: commit, ts: ts})
	}
}

// lso is the last stable offset: the first offset of the earliest open
// transaction, never below the log start, else the high watermark.
func (m *kafkaLog) lso() int64 {
	lso := m.hwm
	for _, t := range m.txns {
		if t.state == "open" && t.first >= 0 {
			lso = min(lso, t.first)
		}
	}
	return max(lso, m.logStart)
}

func (m *kafkaLog) aborted(r modelRec) bool { return r.txn >= 0 && m.txns[r.txn].state == "abort" }

// compact is one pass of Kafka's log cleaner over the whole log: below the
// first uncleanable offset (the last stable offset, and the active segment:
// here the last batch), the newest committed record of each key stays,
// aborted records go, a tombstone and a marker with nothing of its
// transaction left below it get a delete horizon and go once it has passed.
func (m *kafkaLog) compact(now int64) {
	if len(m.recs) == 0 {
		return
	}
	end := min(m.lso(), m.recs[len(m.recs)-1].off)
	hasData := map[int]bool{}
	newest := map[string]int64{}
	for _, r := range m.recs {
		if r.off >= end || r.marker {
			continue
		}
		if r.txn >= 0 {
			hasData[r.txn] = true
		}
		if !m.aborted(r) {
			newest[r.key] = r.off
		}
	}
	var kept []modelRec
	for _, r := range m.recs {
		if r.off < end {
			switch {
			case r.marker:
				if !hasData[r.txn] {
					if r.horizon != 0 && now >= r.horizon {
						continue
					}
					if r.horizon == 0 {
						r.horizon = now + m.deleteRetention
					}
				}
			case m.aborted(r), newest[r.key] != r.off:
				continue
			case r.value == "<nil>":
				if r.horizon != 0 && now >= r.horizon {
					continue
				}
				if r.horizon == 0 {
					r.horizon = now + m.deleteRetention
				}
			}
		}
		kept = append(kept, r)
	}
	m.recs = kept
}

// retain drops batches older than retention from the front, as
// retention.ms does.
func (m *kafkaLog) retain(now, retention int64) {
	for len(m.recs) > 0 && m.recs[0].ts < now-retention {
		m.logStart = max(m.logStart, m.recs[0].off+1)
		m.recs = m.recs[1:]
	}
}

// retainBytes drops batches from the front while the log would still
// hold limit bytes without them, as retention.bytes does; size gives each
// batch's size by its offset.
func (m *kafkaLog) retainBytes(limit int64, size map[int64]int64) {
	var total int64
	for _, r := range m.recs {
		total += size[r.off]
	}
	for len(m.recs) > 0 && total-size[m.recs[0].off] >= limit {
		total -= size[m.recs[0].off]
		m.logStart = max(m.logStart, m.recs[0].off+1)
		m.recs = m.recs[1:]
	}
}

// deleteBefore is DeleteRecords.
func (m *kafkaLog) deleteBefore(offset int64) {
	m.logStart = max(m.logStart, offset)
	for len(m.recs) > 0 && m.recs[0].off < offset {
		m.recs = m.recs[1:]
	}
}

// recreate is the partition of a topic deleted and made again: empty, and
// no transaction has written to it.
func (m *kafkaLog) recreate() {
	m.recs, m.hwm, m.logStart, m.skip = nil, 0, 0, 0
	for i := range m.txns {
		m.txns[i].first = -1
	}
}

// read returns what a reader at the isolation level gets: data records
// and markers, as "offset key=value" or "offset commit"/"offset abort".
func (m *kafkaLog) read(committed bool) []string {
	end := m.hwm
	if committed {
		end = m.lso()
	}
	var out []string
	for _, r := range m.recs {
		if r.off >= end || committed && !r.marker && m.aborted(r) {
			continue
		}
		out = append(out, describeRec(r.off, r.marker, r.commit, r.key, r.value))
	}
	return out
}

func describeRec(off int64, marker, commit bool, key, value string) string {
	if marker {
		return fmt.Sprintf("%d %s", off, map[bool]string{true: "commit", false: "abort"}[commit])
	}
	return fmt.Sprintf("%d %s=%s", off, key, value)
}

// logView is what a reader of partition 0 at one isolation level gets and
// the watermarks it is told.
type logView struct {
	Records                             []string
	LogStart, HighWatermark, LastStable int64
}

// leaderFetch sends one Fetch of partition 0 of topic at offset, at an
// isolation level (1 read_committed), to the partition's leader.
func leaderFetch(t *testing.T, cl *kgo.Client, topic string, offset int64, isolation int8) *kmsg.FetchResponseTopicPartition {
	t.Helper()
	md, err := kadm.NewClient(cl).ListTopics(ctxT(t), topic)
	require.NoError(t, err)
	require.NoError(t, md[topic].Err)
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.SessionEpoch, req.IsolationLevel = 50<<20, -1, isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, md[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.LogStartOffset, rp.CurrentLeaderEpoch = offset, 10<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl.Broker(int(md[topic].Partitions[0].Leader)))
	require.NoError(t, err)
	p := &resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode, "fetch at %d", offset)
	return p
}

// logStartOf lists partition 0's log start offset.
func logStartOf(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctxT(t), topic)
	require.NoError(t, err)
	start, _ := starts.Lookup(topic, 0)
	require.NoError(t, start.Err)
	return start.Offset
}

// readLog fetches partition 0 of topic from its log start at an isolation
// level, from its leader, with raw Fetch requests whose answers kgo
// processes as its consumer does (dropping aborted transactions' records
// at read_committed), keeping markers, until the end a reader at that
// level may read to.
func readLog(t *testing.T, k *fixtures.Kafka, topic string, committed bool) logView {
	t.Helper()
	cl := k.Client()
	level := kgo.ReadUncommitted()
	var isolation int8
	if committed {
		level, isolation = kgo.ReadCommitted(), 1
	}
	var view logView
	for offset := logStartOf(t, cl, topic); ; {
		p := leaderFetch(t, cl, topic, offset, isolation)
		view.LogStart, view.HighWatermark, view.LastStable = p.LogStartOffset, p.HighWatermark, p.LastStableOffset
		end := p.HighWatermark
		if committed {
			end = p.LastStableOffset
		}
		if offset >= end || len(p.RecordBatches) == 0 {
			return view
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Offset: offset,
			IsolationLevel: level, Topic: topic}, p, kgo.DefaultDecompressor(), nil)
		require.NoError(t, fp.Err)
		for _, r := range fp.Records {
			if r.Attrs.IsControl() {
				require.Len(t, r.Key, 4)
				view.Records = append(view.Records, describeRec(r.Offset, true, binary.BigEndian.Uint16(r.Key[2:]) == 1, "", ""))
				continue
			}
			v := string(r.Value)
			if r.Value == nil {
				v = "<nil>"
			}
			view.Records = append(view.Records, describeRec(r.Offset, false, false, string(r.Key), v))
		}
		require.Greater(t, next, offset, "the reader moves on")
		offset = next
	}
}

// batchSizes returns the size of each stored batch of partition 0 of
// topic, by base offset.
func batchSizes(t *testing.T, k *fixtures.Kafka, topic string) map[int64]int64 {
	t.Helper()
	cl := k.Client()
	out := map[int64]int64{}
	for offset := logStartOf(t, cl, topic); ; {
		p := leaderFetch(t, cl, topic, offset, 0)
		raw := p.RecordBatches
		if len(raw) == 0 {
			return out
		}
		for len(raw) >= 12 {
			n := 12 + int(binary.BigEndian.Uint32(raw[8:]))
			require.LessOrEqual(t, n, len(raw))
			base := int64(binary.BigEndian.Uint64(raw))
			out[base] = int64(n)
			offset = base + int64(binary.BigEndian.Uint32(raw[23:])) + 1
			raw = raw[n:]
		}
	}
}

// txnPath is one way records leave or move in a log. run does it on the
// broker and on the model at each phase of the scenario: "open" with a
// transaction open, "ended" once it ended, "later" and "later2" after
// delete.retention.ms each.
type txnPath struct {
	name    string
	configs []string
	opts    []broker.Option
	// dropsTopic: the topic is gone after the "open" phase, so the open
	// transaction writes nothing more to it. advances: run moves the
	// broker's clock on by delete.retention.ms or more itself.
	dropsTopic, advances bool
	run                  func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string)
}

const txnTopic = "ledger"

func recreateTopic(t *testing.T, k *fixtures.Kafka, configs []string) {
	t.Helper()
	set := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		set[configs[i]] = kmsg.StringPtr(configs[i+1])
	}
	resp, err := k.Admin().CreateTopic(ctxT(t), 1, -1, set, txnTopic)
	require.NoError(t, err)
	require.NoError(t, resp.Err)
}

var txnPaths = []txnPath{
	{name: "compact on demand", run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, _ string) {
		k.Compact(txnTopic)
		m.compact(k.Clock().Now().UnixMilli())
	}},
	{name: "compact on its interval", advances: true, configs: []string{"min.cleanable.dirty.ratio", "0"},
		opts: []broker.Option{broker.WithCompactionInterval(time.Second)},
		run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, _ string) {
			k.Advance(time.Second)
			m.compact(k.Clock().Now().UnixMilli())
		}},
	{name: "retention by time", advances: true, configs: []string{"retention.ms", "5000"}, run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, _ string) {
		k.Advance(6 * time.Second) // past the open transaction's first record too
		k.Broker().ApplyRetention()
		m.retain(k.Clock().Now().UnixMilli(), 5000)
	}},
	{name: "retention by size", run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string) {
		size := batchSizes(t, k, txnTopic)
		var total, drop int64
		for _, n := range size {
			total += n
		}
		for _, r := range m.recs { // while a transaction is open, up to its first record; else the first batch
			drop += size[r.off]
			if phase != "open" || r.off >= m.lso() {
				break
			}
		}
		limit := total - drop
		resp, err := k.Admin().AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "retention.bytes", Value: kmsg.StringPtr(fmt.Sprint(limit))}}, txnTopic)
		require.NoError(t, err)
		require.NoError(t, resp[0].Err)
		k.Broker().ApplyRetention()
		m.retainBytes(limit, size)
	}},
	{name: "DeleteRecords", run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string) {
		to := m.lso() + 1 // past the open transaction's first offset while one is open
		if phase != "open" {
			to = m.hwm - 1
		}
		deleted, err := k.Admin().DeleteRecords(ctxT(t), kadm.Offsets{txnTopic: {0: {Topic: txnTopic, Partition: 0, At: to}}})
		require.NoError(t, err)
		d, _ := deleted.Lookup(txnTopic, 0)
		require.NoError(t, d.Err)
		m.deleteBefore(to)
	}},
	{name: "offset gap", run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, _ string) {
		k.SkipOffsets(txnTopic, 0, 5)
		m.skip += 5
	}},
	{name: "offset gap then compaction", run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string) {
		if phase == "open" {
			k.SkipOffsets(txnTopic, 0, 5)
			m.skip += 5
		}
		k.Compact(txnTopic)
		m.compact(k.Clock().Now().UnixMilli())
	}},
	{name: "topic delete", dropsTopic: true, run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string) {
		if phase != "open" {
			return
		}
		resp, err := k.Admin().DeleteTopic(ctxT(t), txnTopic)
		require.NoError(t, err)
		require.NoError(t, resp.Err)
		recreateTopic(t, k, txnConfigs)
		m.recreate()
	}},
	{name: "Reset", dropsTopic: true, run: func(t *testing.T, k *fixtures.Kafka, m *kafkaLog, phase string) {
		if phase != "open" {
			return
		}
		k.Broker().Reset()
		recreateTopic(t, k, txnConfigs)
		m.recreate()
	}},
}

// txnConfigs are the topic's configs in every path.
var txnConfigs = []string{"cleanup.policy", "compact,delete", "delete.retention.ms", "1000"}

// TestEveryPathKeepsTransactions runs each path over committed, aborted and
// open transactions writing the same key, with the open one then committed
// or aborted, at one broker and three, and compares what readers at both isolation levels get, and
// the watermarks they are told, with the model after every phase.
func TestEveryPathKeepsTransactions(t *testing.T) {
	t.Parallel()
	for _, path := range txnPaths {
		for _, c := range []struct {
			commit  bool
			brokers int
		}{{true, 1}, {false, 1}, {true, 3}, {false, 3}} {
			commit := c.commit
			name := path.name + map[bool]string{true: ", open one commits", false: ", open one aborts"}[commit] + fmt.Sprintf(", %d brokers", c.brokers)
			t.Run(name, func(t *testing.T) {
				configs := append(slices.Clone(txnConfigs), path.configs...)
				k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.ManualClock(time.Now().Truncate(time.Millisecond)),
					fixtures.Brokers(c.brokers), fixtures.Topic(txnTopic, 1, configs...),
					fixtures.BrokerOptions(append([]broker.Option{broker.WithRetentionCheckInterval(0)}, path.opts...)...))
				m := &kafkaLog{deleteRetention: 1000}
				now := func() int64 { return k.Clock().Now().UnixMilli() }
				ctx := ctxT(t)
				plain := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
				produce := func(cl *kgo.Client, txn int, key, value string) {
					t.Helper()
					r := &kgo.Record{Topic: txnTopic, Key: []byte(key), Value: []byte(value), Timestamp: k.Clock().Now()}
					if value == "<nil>" {
						r.Value = nil
					}
					require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
					m.data(txn, key, value, now())
				}
				var seen logView // the watermarks so far: none may go back, but for a topic made again
				check := func(phase string) {
					t.Helper()
					for _, committed := range []bool{false, true} {
						got := readLog(t, k, txnTopic, committed)
						want := logView{Records: m.read(committed), LogStart: m.logStart, HighWatermark: m.hwm, LastStable: m.lso()}
						assert.Equal(t, want, got, "%s, read_committed=%v", phase, committed)
						assert.GreaterOrEqual(t, got.LogStart, seen.LogStart, "%s: log start", phase)
						assert.GreaterOrEqual(t, got.HighWatermark, seen.HighWatermark, "%s: high watermark", phase)
						assert.GreaterOrEqual(t, got.LastStable, seen.LastStable, "%s: last stable offset", phase)
						seen = got
					}
				}

				p1 := k.TransactionalClient("p1", kgo.RecordPartitioner(kgo.ManualPartitioner()))
				txn := m.begin()
				require.NoError(t, p1.BeginTransaction())
				produce(p1, txn, "k", "c1")
				produce(p1, txn, "x", "x1")
				require.NoError(t, p1.EndTransaction(ctx, kgo.TryCommit))
				m.end(txn, true, now())

				txn = m.begin()
				require.NoError(t, p1.BeginTransaction())
				produce(p1, txn, "k", "a1")
				produce(p1, txn, "x", "xa")
				require.NoError(t, p1.EndTransaction(ctx, kgo.TryAbort))
				m.end(txn, false, now())

				produce(plain, -1, "x", "<nil>")
				produce(plain, -1, "y", "y1")

				p2 := k.TransactionalClient("p2", kgo.RecordPartitioner(kgo.ManualPartitioner()))
				open := m.begin()
				require.NoError(t, p2.BeginTransaction())
				produce(p2, open, "k", "o1")
				produce(plain, -1, "k", "p1")
				produce(plain, -1, "y", "y2")
				check("before")

				path.run(t, k, m, "open")
				if path.dropsTopic {
					seen = logView{}
				}
				check("open")
				if !path.dropsTopic {
					// The partition's producer state still has the open
					// transaction at its first offset, as Kafka's keeps it
					// whatever left the log.
					described, err := k.Admin().DescribeProducers(ctx, kadm.TopicsSet{txnTopic: {0: {}}})
					require.NoError(t, err)
					d := described[txnTopic].Partitions[0]
					require.NoError(t, d.Err)
					starts := map[int64]bool{}
					for _, ap := range d.ActiveProducers {
						starts[ap.CurrentTxnStartOffset] = true
					}
					assert.True(t, starts[m.txns[open].first], "open transaction at %d: %v", m.txns[open].first, d.ActiveProducers)
				}
				if path.dropsTopic {
					plain = k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())) // one that never knew the old topic's id
				}

				if !path.dropsTopic {
					produce(p2, open, "k", "o2")
				}
				err := p2.EndTransaction(ctx, kgo.TransactionEndTry(commit))
				if path.name == "Reset" {
					// The coordinator forgot the transactional id: nothing
					// of the transaction may appear whatever the answer.
					m.txns[open].state = "abort"
				} else {
					require.NoError(t, err)
					m.end(open, commit, now())
				}
				produce(plain, -1, "z", "z1")
				check("ended before the path")
				path.run(t, k, m, "ended")
				check("ended")

				for _, phase := range []string{"later", "later2"} {
					if !path.advances {
						k.Advance(time.Second) // delete.retention.ms
					}
					path.run(t, k, m, phase)
					check(phase)
				}
				t.Log(strings.Join(m.read(false), ", "))
			})
		}
	}
}

// TestCompactionMatchesTheModelOnRandomHistories drives random histories
// through real clients (three transactional producers whose transactions
// interleave, commit and abort, plain writes and tombstones on four keys,
// compactions, DeleteRecords, offset gaps, the clock moving by half of
// delete.retention.ms) and after every compaction and deletion compares
// both isolation levels, markers and watermarks with the model of Kafka's
// rules.
func TestCompactionMatchesTheModelOnRandomHistories(t *testing.T) {
	t.Parallel()
	for seed := range int64(16) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			k := fixtures.Start(t, fixtures.Profile("kafka"), fixtures.ManualClock(time.Now().Truncate(time.Millisecond)),
				fixtures.Topic(txnTopic, 1, txnConfigs...), fixtures.BrokerOptions(broker.WithRetentionCheckInterval(0)))
			m := &kafkaLog{deleteRetention: 1000}
			ctx := ctxT(t)
			now := func() int64 { return k.Clock().Now().UnixMilli() }
			keys := []string{"a", "b", "c", "d"}
			produce := func(cl *kgo.Client, txn int, history *[]string) {
				key, value := keys[rng.IntN(len(keys))], fmt.Sprint("v", len(m.recs), "-", m.hwm)
				if rng.IntN(8) == 0 {
					value = "<nil>"
				}
				r := &kgo.Record{Topic: txnTopic, Key: []byte(key), Value: []byte(value), Timestamp: k.Clock().Now()}
				if value == "<nil>" {
					r.Value = nil
				}
				require.NoError(t, cl.ProduceSync(ctx, r).FirstErr())
				m.data(txn, key, value, now())
				*history = append(*history, fmt.Sprintf("%s=%s(txn %d)", key, value, txn))
			}
			type producer struct {
				cl   *kgo.Client
				open int // the model's transaction, -1 when none is open
			}
			var producers []*producer
			for i := range 3 {
				producers = append(producers, &producer{open: -1, cl: k.TransactionalClient(fmt.Sprint("random-", i),
					kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(5*time.Minute))})
			}
			plain := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
			var history []string
			check := func(when string) {
				t.Helper()
				for _, committed := range []bool{false, true} {
					got := readLog(t, k, txnTopic, committed)
					want := logView{Records: m.read(committed), LogStart: m.logStart, HighWatermark: m.hwm, LastStable: m.lso()}
					require.Equal(t, want, got, "%s, read_committed=%v, after %s", when, committed, strings.Join(history, ", "))
				}
			}
			end := func(p *producer, commit bool) {
				require.NoError(t, p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
				m.end(p.open, commit, now())
				history = append(history, fmt.Sprintf("end txn %d commit=%v", p.open, commit))
				p.open = -1
			}
			for range 80 {
				switch op := rng.IntN(12); {
				case op == 10:
					to := m.logStart + rng.Int64N(m.hwm-m.logStart+1)
					deleted, err := k.Admin().DeleteRecords(ctx, kadm.Offsets{txnTopic: {0: {Topic: txnTopic, Partition: 0, At: to}}})
					require.NoError(t, err)
					d, _ := deleted.Lookup(txnTopic, 0)
					require.NoError(t, d.Err)
					m.deleteBefore(to)
					history = append(history, fmt.Sprint("delete before ", to))
					check("after DeleteRecords")
				case op == 11:
					n := 1 + rng.Int64N(3)
					k.SkipOffsets(txnTopic, 0, n)
					m.skip += n
					history = append(history, fmt.Sprint("skip ", n))
				case op < 4:
					p := producers[rng.IntN(len(producers))]
					if p.open < 0 {
						require.NoError(t, p.cl.BeginTransaction())
						p.open = m.begin()
					}
					produce(p.cl, p.open, &history)
				case op < 6:
					produce(plain, -1, &history)
				case op < 7:
					for _, p := range producers {
						if p.open >= 0 {
							end(p, rng.IntN(2) == 0)
							break
						}
					}
				case op < 9:
					k.Compact(txnTopic)
					m.compact(now())
					history = append(history, "compact")
					check("after a compaction")
				default:
					k.Advance(500 * time.Millisecond)
					history = append(history, "+500ms")
				}
			}
			for _, p := range producers {
				if p.open >= 0 {
					end(p, rng.IntN(2) == 0)
				}
			}
			produce(plain, -1, &history) // the tail, so every marker can be cleaned
			for range 3 {
				k.Advance(time.Second)
				k.Compact(txnTopic)
				m.compact(now())
				history = append(history, "+1s, compact")
				check("at the end")
			}
		})
	}
}
