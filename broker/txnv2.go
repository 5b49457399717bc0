package broker

// AddPartitionsToTxn v4 and v5: the batched form Kafka's partition leaders
// send the transaction coordinator (KIP-890). With VerifyOnly a leader asks
// whether a producer's partitions are in its open transaction before it
// appends a transactional batch of a client of the older protocol
// (Produce v3-v11, KIP-890's first part); without it (v5, Kafka 4.x) a
// leader adds the partitions a Produce v12+ writes to (KIP-890's second
// part). vastfake's own Produce handler asks the coordinator directly
// (Broker.checkTransactional); this handler serves tools and tests that
// send the request as a broker would. Kafka requires ClusterAction on the
// cluster for it; vastfake's identity policies have no cluster resource,
// so any client may send it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/coordinator"
)

// addPartitionsToTxnBatch answers AddPartitionsToTxn v4+: each transaction
// of the batch on its own, as Kafka's coordinator answers them, with one
// result per transactional id (a repeated id is answered once, its first
// copy). Within a transaction a refused partition (UNKNOWN_TOPIC_OR_PARTITION,
// TOPIC_AUTHORIZATION_FAILED) leaves the others OPERATION_NOT_ATTEMPTED, as
// in v0-v3. VerifyOnly answers each partition 0 when it is in the producer's
// open transaction, else TRANSACTION_ABORTABLE; otherwise the partitions
// join the transaction. An id another broker coordinates (several brokers,
// kafka profile) gets NOT_COORDINATOR for all its partitions.
func (b *Broker) addPartitionsToTxnBatch(r *request, req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	here, ownOnly := b.servesOnlyOwn(r)
	txns := firstOfEach(req.Transactions, func(t *kmsg.AddPartitionsToTxnRequestTransaction) string { return t.TransactionalID })
	for _, rt := range txns {
		topics := mergeTopics(rt.Topics,
			func(t *kmsg.AddPartitionsToTxnRequestTransactionTopic) string { return t.Topic },
			func(t *kmsg.AddPartitionsToTxnRequestTransactionTopic) *[]int32 { return &t.Partitions },
			func(p *int32) int32 { return *p },
			firstOfEach)
		codes := make([][]int16, len(topics))
		var parts []coordinator.TopicPartition
		refused := false
		for i, t := range topics {
			codes[i] = make([]int16, len(t.Partitions))
			top := b.topicNamed(r, t.Topic)
			allowed := b.allowTopic(r, KafkaWrite, t.Topic)
			for j, p := range t.Partitions {
				switch {
				case !allowed:
					codes[i][j] = kerr.TopicAuthorizationFailed.Code
				case top == nil || top.partition(p) == nil:
					codes[i][j] = kerr.UnknownTopicOrPartition.Code
				default:
					parts = append(parts, coordinator.TopicPartition{Topic: top.name, Partition: p})
					continue
				}
				refused = true
			}
		}
		var all int16
		var verified []int16
		switch {
		case ownOnly && b.TxnCoordinatorOf(rt.TransactionalID) != here:
			all = kerr.NotCoordinator.Code
		case refused:
			all = kerr.OperationNotAttempted.Code
		case rt.TransactionalID == "":
			all = kerr.InvalidRequest.Code
		case rt.VerifyOnly:
			verified, all = b.coord.VerifyPartitionsInTxn(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, parts)
		default:
			all = b.coord.AddPartitionsToTxn(rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, parts)
		}
		st := kmsg.NewAddPartitionsToTxnResponseTransaction()
		st.TransactionalID = rt.TransactionalID
		k := 0 // index into verified: the partitions in parts' order
		for i, t := range topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = t.Topic
			for j, p := range t.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				sp.Partition, sp.ErrorCode = p, all
				switch {
				case codes[i][j] != 0 && all != kerr.NotCoordinator.Code:
					sp.ErrorCode = codes[i][j]
				case verified != nil:
					sp.ErrorCode = verified[k]
					k++
				}
				tt.Partitions = append(tt.Partitions, sp)
			}
			st.Topics = append(st.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, st)
	}
	return resp
}
