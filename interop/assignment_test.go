package interop_test

import (
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// TestConfluentReplicaAssignments: librdkafka's admin client creating topics
// with explicit replica assignments at 3 brokers (kafka profile) gets
// Kafka's codes: a list naming more brokers than the cluster has, an
// unknown broker, or a broker twice is INVALID_REPLICA_ASSIGNMENT, never
// INVALID_REPLICATION_FACTOR; a valid one is created with its replicas.
func TestConfluentReplicaAssignments(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"))
	adm := ckAdmin(t, b.Addr())
	for name, tc := range map[string]struct {
		assign [][]int32
		want   kafka.ErrorCode
	}{
		"four replicas":  {[][]int32{{0, 1, 2, 3}}, kafka.ErrInvalidReplicaAssignment},
		"unknown broker": {[][]int32{{0, 7}}, kafka.ErrInvalidReplicaAssignment},
		"broker twice":   {[][]int32{{1, 1}}, kafka.ErrInvalidReplicaAssignment},
		"valid":          {[][]int32{{2, 0}, {1, 2}}, kafka.ErrNoError},
	} {
		res, err := adm.CreateTopics(ctxCK(t), []kafka.TopicSpecification{{Topic: "assigned-" + name[:4], NumPartitions: len(tc.assign), ReplicaAssignment: tc.assign}})
		require.NoError(t, err, name)
		require.Len(t, res, 1)
		assert.Equal(t, tc.want, res[0].Error.Code(), "%s: %v", name, res[0].Error)
	}
	_, _, replicas, _ := b.PartitionState("assigned-vali", 0)
	assert.Equal(t, []int32{2, 0}, replicas)
}
