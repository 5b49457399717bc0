package broker

// Transactions: InitProducerId with a transactional id, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions and
// ListTransactions. The transaction state lives in package coordinator; the
// markers that end a transaction are written here, into the partitions'
// logs (log.Partition.AppendMarker), with the producer-state table that
// idempotent de-duplication uses (log.Producers.Mark).
//
// Versions are Kafka 4.x's: AddPartitionsToTxn v0-v5 (v4+ is the batched
// form brokers send, txnv2.go), AddOffsetsToTxn v0-v4, EndTxn v0-v5 and
// TxnOffsetCommit v0-v5. What a request gets follows its version, as in
// Kafka: a client of the older protocol adds partitions and groups
// explicitly and keeps its epoch across transactions; one of KIP-890's
// second part (transaction.version 2, advertised by the Kafka version the
// broker follows) adds them by producing (Produce v12+) and committing
// (TxnOffsetCommit v5+), and each EndTxn v5+ bumps its epoch. Produce
// verifies a transactional batch against its transaction as Kafka 3.6+
// does (KIP-890's first part).
// v0-v1 of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, and v0-v3 of
// InitProducerId, answer INVALID_PRODUCER_EPOCH where later versions answer
// PRODUCER_FENCED, as Kafka does for clients that predate that code.
// A transactional request that reaches a broker other than the id's
// coordinator (several brokers, kafka profile) gets NOT_COORDINATOR.
// VAST: no transactions (NoIdempotence hides every one of these APIs); in
// the audit profile each request is served as Kafka serves it and recorded
// as a finding.

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
)

// fencedCode is PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for a version
// older than newest, the first that knows PRODUCER_FENCED.
func fencedCode(code int16, version, newest int16) int16 {
	if code == kerr.ProducerFenced.Code && version < newest {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// initTransactionalProducer answers InitProducerId for a transactional id;
// see coordinator.InitProducerID. An empty transactional id gets
// INVALID_REQUEST, as in Kafka.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
func initTransactionalProducer(b *Broker, r *request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) kmsg.Response {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if *req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	pid, epoch := int64(-1), int16(-1)
	if r.version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	id, ep, code := b.coord.InitProducerID(*req.TransactionalID, timeout, pid, epoch, func() int64 { return b.nextProducerID.Add(1) })
	resp.ErrorCode = fencedCode(code, r.version, 4)
	if code == 0 {
		resp.ProducerID, resp.ProducerEpoch = id, ep
	}
	return resp
}

// handleAddPartitionsToTxn answers AddPartitionsToTxn v0-v5: the partitions
// join the producer's transaction, which starts with the first. As in
// Kafka, if any partition is refused (UNKNOWN_TOPIC_OR_PARTITION,
// TOPIC_AUTHORIZATION_FAILED) none is added and the others get
// OPERATION_NOT_ATTEMPTED. A partition named twice is answered once, as
// Kafka collects the request into a set. v4+ is the batched form Kafka's
// brokers send the transaction coordinator (handleAddPartitionsToTxnBatch).
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
// Authorizes: KafkaWrite on each topic.
func handleAddPartitionsToTxn(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AddPartitionsToTxnRequest)
	if r.version >= 4 {
		return b.addPartitionsToTxnBatch(r, req)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if topics := mergeTopics(req.Topics,
		func(t *kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic },
		func(t *kmsg.AddPartitionsToTxnRequestTopic) *[]int32 { return &t.Partitions },
		func(p *int32) int32 { return *p },
		firstOfEach); !sameSlice(topics, req.Topics) {
		merged := *req
		merged.Topics = topics
		req = &merged
	}
	codes := make([][]int16, len(req.Topics))
	var parts []coordinator.TopicPartition
	refused := false
	for i, rt := range req.Topics {
		codes[i] = make([]int16, len(rt.Partitions))
		t := b.topicNamed(r, rt.Topic)
		allowed := b.allowTopic(r, KafkaWrite, rt.Topic)
		for j, p := range rt.Partitions {
			switch {
			case !allowed:
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			case t == nil || t.partition(p) == nil:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				// The topic's own name, not the request's copy: an open
				// transaction keeps it.
				parts = append(parts, coordinator.TopicPartition{Topic: t.name, Partition: p})
				continue
			}
			refused = true
		}
	}
	var code int16
	if !refused {
		code = fencedCode(b.coord.AddPartitionsToTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts), r.version, 2)
	}
	for i, rt := range req.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for j, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition, sp.ErrorCode = p, code
			if refused {
				sp.ErrorCode = kerr.OperationNotAttempted.Code
				if codes[i][j] != 0 {
					sp.ErrorCode = codes[i][j]
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// handleAddOffsetsToTxn answers AddOffsetsToTxn v0-v4: the group joins the
// producer's transaction, so that TxnOffsetCommit may commit its offsets.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
// Authorizes: KafkaRead on the group (GROUP_AUTHORIZATION_FAILED).
func handleAddOffsetsToTxn(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if !b.allowGroup(r, KafkaRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp
	}
	resp.ErrorCode = fencedCode(b.coord.AddOffsetsToTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group), r.version, 2)
	return resp
}

// handleEndTxn answers EndTxn v0-v5: the transaction commits or aborts, its
// markers are in its partitions and its offsets committed (or dropped)
// when the answer is sent. From v5 (KIP-890's second part) the markers
// carry the next epoch, which the answer returns with the producer id (see
// coordinator.EndTxnV2); before, the producer keeps its epoch.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
func handleEndTxn(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if r.version >= 5 {
		resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = b.coord.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit,
			func() int64 { return b.nextProducerID.Add(1) })
		return resp
	}
	resp.ErrorCode = fencedCode(b.coord.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), r.version, 2)
	return resp
}

// handleTxnOffsetCommit answers TxnOffsetCommit v0-v5; see
// coordinator.TxnOffsetCommit. Partitions of topics that do not exist get
// UNKNOWN_TOPIC_OR_PARTITION. A partition named twice is answered once
// and its last copy kept, as OffsetCommit does.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
// Authorizes: KafkaRead on the group, then on each topic.
func handleTxnOffsetCommit(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.TxnOffsetCommitRequest)
	if topics := mergeTopics(req.Topics,
		func(t *kmsg.TxnOffsetCommitRequestTopic) string { return t.Topic },
		func(t *kmsg.TxnOffsetCommitRequestTopic) *[]kmsg.TxnOffsetCommitRequestTopicPartition {
			return &t.Partitions
		},
		func(p *kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition },
		lastOfEach); !sameSlice(topics, req.Topics) {
		merged := *req
		merged.Topics = topics
		req = &merged
	}
	groupOK := b.allowGroup(r, KafkaRead, req.Group)
	known := *req
	known.Topics = nil
	var unknown []kmsg.TxnOffsetCommitResponseTopic
	for _, rt := range req.Topics {
		t := b.topicNamed(r, rt.Topic)
		code := int16(0)
		switch {
		case !groupOK:
			code = kerr.GroupAuthorizationFailed.Code
		case !b.allowTopic(r, KafkaRead, rt.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		kt := rt
		kt.Partitions = nil
		ut := kmsg.NewTxnOffsetCommitResponseTopic()
		ut.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			if code == 0 && t != nil && t.partition(rp.Partition) != nil {
				kt.Partitions = append(kt.Partitions, rp)
				continue
			}
			up := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			up.Partition, up.ErrorCode = rp.Partition, code
			if code == 0 {
				up.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			ut.Partitions = append(ut.Partitions, up)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
		if len(ut.Partitions) > 0 {
			unknown = append(unknown, ut)
		}
	}
	resp := b.coord.TxnOffsetCommit(&known)
	resp.Topics = append(resp.Topics, unknown...)
	return resp
}

// handleDescribeTransactions answers DescribeTransactions v0; see
// coordinator.DescribeTransactions; an id named twice is answered once.
// With several brokers in the kafka
// profile, an id another broker coordinates gets NOT_COORDINATOR.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
func handleDescribeTransactions(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeTransactionsRequest)
	if ids := firstOfEach(req.TransactionalIDs, self); !sameSlice(ids, req.TransactionalIDs) {
		merged := *req
		merged.TransactionalIDs = ids
		req = &merged
	}
	return b.coord.DescribeTransactions(req)
}

// handleListTransactions answers ListTransactions v0-v1; see
// coordinator.ListTransactions. With several brokers in the kafka profile
// each lists the ids it coordinates, as Kafka's brokers do (admin clients
// ask every broker).
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
func handleListTransactions(b *Broker, r *request) kmsg.Response {
	return b.coord.ListTransactions(r.kreq.(*kmsg.ListTransactionsRequest))
}

// handleDescribeProducers answers DescribeProducers v0, for admin tools
// (kafka-transactions.sh describe-producers, kadm): each partition's
// idempotent and transactional producers as its producer state holds them,
// with the first offset of the transaction each has open there (-1 for
// none). A partition that does not exist gets UNKNOWN_TOPIC_OR_PARTITION;
// one named twice is answered once. The coordinator epoch is 0, the one
// the markers carry. With several brokers in the kafka profile a partition
// led elsewhere gets NOT_LEADER_OR_FOLLOWER, as in Kafka.
// VAST: not served (NoIdempotence hides it); audited, served as here and recorded.
// Authorizes: KafkaRead on each topic (TOPIC_AUTHORIZATION_FAILED).
func handleDescribeProducers(b *Broker, r *request) kmsg.Response {
	req := r.kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	topics := mergeTopics(req.Topics,
		func(t *kmsg.DescribeProducersRequestTopic) string { return t.Topic },
		func(t *kmsg.DescribeProducersRequestTopic) *[]int32 { return &t.Partitions },
		func(p *int32) int32 { return *p },
		firstOfEach)
	// First the partitions and their errors, each topic looked up and
	// authorized once; then the producer table, walked once for all.
	want := map[*log.Partition]bool{}
	found := make([][]*log.Partition, len(topics)) // nil where the answer is an error
	for i, rt := range topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t := b.topicNamed(r, rt.Topic)
		allowed := b.allowTopic(r, KafkaRead, rt.Topic)
		found[i] = make([]*log.Partition, len(rt.Partitions))
		for j, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			switch part, _ := lookupPartition(t, p, false); {
			case !allowed:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case part == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				found[i][j], want[part] = part, true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.appendMu.RLock() // the producer state table is guarded by the append lock
	states := b.producers.Of(want)
	b.appendMu.RUnlock()
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			part := found[i][j]
			if part == nil {
				continue
			}
			open := map[int64]int64{}
			for _, o := range part.OpenTransactions() {
				open[o.ProducerID] = o.FirstOffset
			}
			sp := &resp.Topics[i].Partitions[j]
			for _, ps := range states[part] {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.Epoch)
				ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
				ap.CurrentTxnStartOffset = -1
				if first, ok := open[ps.ProducerID]; ok {
					ap.CurrentTxnStartOffset = first
				}
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
		}
	}
	return resp
}

// writeTxnMarkers writes the markers that end a transaction into its
// partitions and into the __consumer_offsets partition of each group it
// commits offsets for, as Kafka's coordinator has their leaders write them,
// and gives the producer's state in each data partition the marker's epoch,
// then wakes the fetches waiting for data. Partitions of deleted topics are
// skipped. The coordinator calls it with its lock held.
func (b *Broker) writeTxnMarkers(m coordinator.TxnMarkers) {
	now := b.clock.Now()
	marker := log.MarkerBatch(m.ProducerID, m.ProducerEpoch, m.Commit, 0, now)
	defer b.notifyData() // read_committed fetches wait for the last stable offset to move
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	for _, tp := range m.Partitions {
		t := b.data.get(tp.Topic)
		if t == nil {
			continue
		}
		part := t.partition(tp.Partition)
		if part == nil {
			continue
		}
		part.AppendMarker(marker, m.ProducerID, m.Commit, now)
		if !part.Released() {
			b.producers.Mark(part, m.ProducerID, m.ProducerEpoch, now)
		}
	}
	var marked map[int32]bool
	for _, g := range m.Groups {
		_, p, part := b.offsetsPartition(g)
		if part == nil || marked[p] {
			continue
		}
		if marked == nil {
			marked = make(map[int32]bool)
		}
		marked[p] = true
		part.AppendMarker(marker, m.ProducerID, m.Commit, now)
	}
}

// checkTransactional verifies a transactional batch of the transactional
// id txnID against its producer's transaction, adding the partition to it
// from Produce v12 (see coordinator.ProduceInTransaction), and returns the
// check to make again just before the append. A partition not in the
// transaction gets TRANSACTION_ABORTABLE from Produce v11 (KIP-890's first
// part), INVALID_TXN_STATE before, as Kafka maps it.
func (b *Broker) checkTransactional(txnID string, version int16, batch log.Batch, topic string, partition int32) (int16, string, coordinator.TxnCheck) {
	pid, epoch := batch.ProducerID(), batch.ProducerEpoch()
	code, still := b.coord.ProduceInTransaction(txnID, pid, epoch, coordinator.TopicPartition{Topic: topic, Partition: partition}, version >= 12)
	producer := "producer " + strconv.FormatInt(pid, 10)
	switch code {
	case 0:
		return 0, "", still
	case kerr.InvalidProducerEpoch.Code:
		return code, producer + " epoch " + strconv.Itoa(int(epoch)) + " is fenced: transactional id " + strconv.Quote(txnID) + " has another epoch", nil
	case kerr.InvalidProducerIDMapping.Code:
		return code, "transactional id " + strconv.Quote(txnID) + " does not have " + producer, nil
	case kerr.TransactionAbortable.Code:
		if version < 11 {
			code = kerr.InvalidTxnState.Code
		}
		return code, "partition " + topic + "-" + strconv.Itoa(int(partition)) + " is not in " + producer + "'s open transaction (AddPartitionsToTxn first)", nil
	}
	return code, "", nil
}
