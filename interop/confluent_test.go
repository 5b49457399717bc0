package interop_test

// End-to-end tests with confluent-kafka-go (librdkafka, statically linked;
// needs cgo). librdkafka is the client under most non-Java Kafka clients
// (Python, .NET, Go, Node), so these check vastfake with the same protocol
// code the seed walkthrough (walkthrough_test.go) runs from Python.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// ckTimeout bounds every wait of these tests: librdkafka's first group join
// and the rebalances take a few seconds.
const ckTimeout = 60 * time.Second

// ckProfiles runs fn once per rules profile, each with its own broker.
func ckProfiles(t *testing.T, fn func(t *testing.T, profile string, b *broker.Broker)) {
	for _, p := range []string{"vast", "kafka"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			fn(t, p, fixtures.StartBroker(t, broker.WithProfile(p)))
		})
	}
}

// ckConf is the librdkafka configuration VAST needs (no idempotence, no
// compression) plus kv pairs, which override it.
func ckConf(addr string, kv ...any) *kafka.ConfigMap {
	conf := kafka.ConfigMap{
		"bootstrap.servers":    addr,
		"enable.idempotence":   false,
		"compression.type":     "none",
		"log.connection.close": false,
	}
	for i := 0; i+1 < len(kv); i += 2 {
		conf[kv[i].(string)] = kv[i+1]
	}
	return &conf
}

// ckGroupConf is ckConf for a group consumer: earliest, manual commits, a
// short heartbeat so that rebalances in tests finish quickly.
func ckGroupConf(addr, group string, kv ...any) *kafka.ConfigMap {
	return ckConf(addr, append([]any{
		"group.id", group,
		"auto.offset.reset", "earliest",
		"enable.auto.commit", false,
		"heartbeat.interval.ms", 100,
	}, kv...)...)
}

func ckAdmin(t *testing.T, addr string) *kafka.AdminClient {
	t.Helper()
	a, err := kafka.NewAdminClient(ckConf(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func ckCreateTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	ctx := ctxCK(t)
	res, err := ckAdmin(t, addr).CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}})
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	if len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateTopics %s: %v", topic, res)
	}
}

func ckProducer(t *testing.T, conf *kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Flush(5000)
		p.Close()
	})
	return p
}

func ckConsumer(t *testing.T, conf *kafka.ConfigMap) *kafka.Consumer {
	t.Helper()
	c, err := kafka.NewConsumer(conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !c.IsClosed() {
			c.Close()
		}
	})
	return c
}

// ckProduce produces msgs and waits for their delivery reports, which it
// returns in the order they arrived (partition by partition, not the order of
// msgs): each is the message with its partition, offset and error.
func ckProduce(t *testing.T, p *kafka.Producer, msgs ...*kafka.Message) []*kafka.Message {
	t.Helper()
	reports := make(chan kafka.Event, len(msgs))
	for _, m := range msgs {
		if err := p.Produce(m, reports); err != nil {
			t.Fatalf("Produce: %v", err)
		}
	}
	out := make([]*kafka.Message, 0, len(msgs))
	timeout := time.After(ckTimeout)
	for range msgs {
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("delivery report: unexpected event %T %v", ev, ev)
			}
			out = append(out, m)
		case <-timeout:
			t.Fatalf("%d of %d delivery reports within %v", len(out), len(msgs), ckTimeout)
		}
	}
	return out
}

// ckKeyed returns the keyed records first..first+n-1 of topic ("order-N",
// {"order": N}), partitioned by librdkafka's default partitioner.
func ckKeyed(topic string, first, n int) []*kafka.Message {
	msgs := make([]*kafka.Message, 0, n)
	for i := first; i < first+n; i++ {
		msgs = append(msgs, &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny},
			Key:            fmt.Appendf(nil, "order-%d", i),
			Value:          fmt.Appendf(nil, `{"order": %d}`, i),
			Headers:        []kafka.Header{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}},
		})
	}
	return msgs
}

// ckPoll polls c until it has n messages (failing on an error event or at
// ckTimeout) and returns them.
func ckPoll(t *testing.T, c *kafka.Consumer, n int) []*kafka.Message {
	t.Helper()
	return ckPollN(t, c, n, false)
}

// ckPollN is ckPoll; with transient set, an error event that is not fatal
// is logged and polling goes on: librdkafka reports a refused or reset
// connection so and reconnects by itself, which a test whose broker address
// goes away on purpose expects.
func ckPollN(t *testing.T, c *kafka.Consumer, n int, transient bool) []*kafka.Message {
	t.Helper()
	var got []*kafka.Message
	deadline := time.Now().Add(ckTimeout)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages within %v", len(got), n, ckTimeout)
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				t.Fatalf("message error: %v", ev.TopicPartition.Error)
			}
			got = append(got, ev)
		case kafka.Error:
			if !transient || ev.IsFatal() {
				t.Fatalf("consumer error: %v (code %v)", ev, ev.Code())
			}
			t.Logf("transient consumer error: %v", ev)
		}
	}
	return got
}

// ckAssigned returns how many partitions c has assigned.
func ckAssigned(t *testing.T, c *kafka.Consumer) int {
	t.Helper()
	a, err := c.Assignment()
	if err != nil {
		t.Fatalf("Assignment: %v", err)
	}
	return len(a)
}

// ckPollUntil polls every consumer in turn (they must all keep polling while
// the group rebalances) until cond holds, failing at ckTimeout. An error
// event fails the test.
func ckPollUntil(t *testing.T, cond func() bool, msg string, cs ...*kafka.Consumer) {
	t.Helper()
	deadline := time.Now().Add(ckTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", ckTimeout, msg)
		}
		for _, c := range cs {
			if ev, ok := c.Poll(50).(kafka.Error); ok {
				t.Fatalf("consumer error while waiting for %s: %v (code %v)", msg, ev, ev.Code())
			}
		}
	}
}

// TestConfluentProduceConsume produces 30 keyed records with librdkafka's
// default partitioner and reads them back in a group: every record arrives
// once, in order within its partition, and after a commit the committed
// offsets equal the watermarks. The split over the partitions is the seed
// page's (13, 6, 11): the same partitioner, the same keys. A second consumer
// in the group resumes after the commit.
func TestConfluentProduceConsume(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic, group = "ck-orders", "ck-billing"
		ckCreateTopic(t, b.Addr(), topic, 3)
		p := ckProducer(t, ckConf(b.Addr(), "acks", "all"))
		reports := ckProduce(t, p, ckKeyed(topic, 0, 30)...)
		counts := make([]int64, 3)
		delivered := make(map[string]kafka.TopicPartition) // by key
		for _, m := range reports {
			r := m.TopicPartition
			if r.Error != nil {
				t.Fatalf("record %s: %v", m.Key, r.Error)
			}
			if r.Offset != kafka.Offset(counts[r.Partition]) {
				t.Errorf("record %s: offset %d in partition %d, want %d", m.Key, r.Offset, r.Partition, counts[r.Partition])
			}
			counts[r.Partition]++
			delivered[string(m.Key)] = r
		}
		if want := []int64{13, 6, 11}; !slices.Equal(counts, want) {
			t.Errorf("records per partition %v, the seed page's split is %v", counts, want)
		}

		c := ckConsumer(t, ckGroupConf(b.Addr(), group))
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		msgs := ckPoll(t, c, 30)
		next := make([]kafka.Offset, 3)
		seen := make(map[string]bool)
		for _, m := range msgs {
			tp := m.TopicPartition
			if tp.Offset != next[tp.Partition] {
				t.Errorf("partition %d: offset %d, want %d (in order, no gaps)", tp.Partition, tp.Offset, next[tp.Partition])
			}
			next[tp.Partition] = tp.Offset + 1
			var n int
			if _, err := fmt.Sscanf(string(m.Key), "order-%d", &n); err != nil {
				t.Fatalf("key %q: %v", m.Key, err)
			}
			if want := fmt.Sprintf(`{"order": %d}`, n); string(m.Value) != want {
				t.Errorf("key %s: value %q, want %q", m.Key, m.Value, want)
			}
			if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != fmt.Sprint(n) {
				t.Errorf("key %s: headers %v", m.Key, m.Headers)
			}
			if r := delivered[string(m.Key)]; r.Partition != tp.Partition || r.Offset != tp.Offset {
				t.Errorf("key %s read at %d/%d, delivered at %d/%d", m.Key, tp.Partition, tp.Offset, r.Partition, r.Offset)
			}
			seen[string(m.Key)] = true
		}
		if len(seen) != 30 {
			t.Errorf("%d distinct keys, want 30", len(seen))
		}

		committed, err := c.Commit()
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if len(committed) != 3 {
			t.Errorf("Commit returned %v, want 3 partitions", committed)
		}
		parts := []kafka.TopicPartition{}
		for i := range int32(3) {
			parts = append(parts, kafka.TopicPartition{Topic: ckPtr(topic), Partition: i})
		}
		got, err := c.Committed(parts, int(ckTimeout/time.Millisecond))
		if err != nil {
			t.Fatalf("Committed: %v", err)
		}
		for _, tp := range got {
			low, high, err := c.QueryWatermarkOffsets(topic, tp.Partition, int(ckTimeout/time.Millisecond))
			if err != nil {
				t.Fatalf("QueryWatermarkOffsets %d: %v", tp.Partition, err)
			}
			want := counts[tp.Partition]
			if tp.Error != nil || int64(tp.Offset) != want || low != 0 || high != want {
				t.Errorf("partition %d: committed=%v (err %v) low=%d high=%d, want committed=end=%d low=0",
					tp.Partition, tp.Offset, tp.Error, low, high, want)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		// A new consumer in the group starts at the committed offsets.
		ckProduce(t, p, ckKeyed(topic, 30, 5)...)
		c2 := ckConsumer(t, ckGroupConf(b.Addr(), group))
		if err := c2.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, m := range ckPoll(t, c2, 5) {
			keys = append(keys, string(m.Key))
		}
		slices.Sort(keys)
		if want := []string{"order-30", "order-31", "order-32", "order-33", "order-34"}; !slices.Equal(keys, want) {
			t.Errorf("resumed consumer read %v, want %v", keys, want)
		}
	})
}

// TestConfluentGroupSharesPartitions: two consumers of one group share a
// three-partition topic, one and two partitions (the seed page's [1, 2]).
func TestConfluentGroupSharesPartitions(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic, group = "ck-shared", "ck-rebalance"
		ckCreateTopic(t, b.Addr(), topic, 3)
		c1 := ckConsumer(t, ckGroupConf(b.Addr(), group))
		c2 := ckConsumer(t, ckGroupConf(b.Addr(), group))
		for _, c := range []*kafka.Consumer{c1, c2} {
			if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
				t.Fatal(err)
			}
		}
		ckPollUntil(t, func() bool {
			n1, n2 := ckAssigned(t, c1), ckAssigned(t, c2)
			return min(n1, n2) > 0 && n1+n2 == 3
		}, "the three partitions shared out", c1, c2)
		sizes := []int{ckAssigned(t, c1), ckAssigned(t, c2)}
		slices.Sort(sizes)
		if !slices.Equal(sizes, []int{1, 2}) {
			t.Errorf("partitions per consumer %v, want [1 2]", sizes)
		}
		a1, _ := c1.Assignment()
		a2, _ := c2.Assignment()
		var all []int32
		for _, tp := range append(a1, a2...) {
			all = append(all, tp.Partition)
		}
		slices.Sort(all)
		if !slices.Equal(all, []int32{0, 1, 2}) {
			t.Errorf("assigned partitions %v, want each of 0, 1, 2 once", all)
		}
	})
}

// TestConfluentCloseAfterReset: a group consumer whose topic and group
// Broker.Reset (POST /reset) deletes under it still closes. librdkafka
// before 2.1.0 never returns from close() once a topic it is assigned is
// deleted (its toppar reference-count bug, fixed in 2.1.0 by #4187), against
// Apache Kafka as against vastfake; this bundled librdkafka is newer, so a
// hang here would be vastfake's.
func TestConfluentCloseAfterReset(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic, group = "ck-reset", "ck-reset-group"
		ckCreateTopic(t, b.Addr(), topic, 3)
		p := ckProducer(t, ckConf(b.Addr()))
		ckProduce(t, p, ckKeyed(topic, 0, 6)...)
		c := ckConsumer(t, ckGroupConf(b.Addr(), group))
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		ckPoll(t, c, 6)
		b.Reset()
		for range 10 {
			c.Poll(50) // errors about the vanished topic and group are expected
		}
		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		select {
		case err := <-closed:
			_, lib := kafka.LibraryVersion()
			t.Logf("librdkafka %s: close after reset: %v", lib, err)
		case <-time.After(ckTimeout):
			t.Fatalf("Close did not return within %v of a reset", ckTimeout)
		}
	})
}

// TestConfluentCooperativeSticky: a consumer whose only assignor is
// cooperative-sticky is refused under VAST, which runs eager rebalancing
// only; librdkafka surfaces the JoinGroup error INCONSISTENT_GROUP_PROTOCOL
// as a consumer error event. Under the kafka profile the group forms.
func TestConfluentCooperativeSticky(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic, group = "ck-coop", "ck-coop-group"
		ckCreateTopic(t, b.Addr(), topic, 3)
		c := ckConsumer(t, ckGroupConf(b.Addr(), group, "partition.assignment.strategy", "cooperative-sticky"))
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		if profile == "kafka" {
			ckPollUntil(t, func() bool { return ckAssigned(t, c) == 3 }, "3 partitions assigned", c)
			if proto := c.GetRebalanceProtocol(); proto != "COOPERATIVE" {
				t.Errorf("rebalance protocol %q, want COOPERATIVE", proto)
			}
			return
		}
		deadline := time.Now().Add(ckTimeout)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("no consumer error within %v", ckTimeout)
			}
			ev := c.Poll(100)
			if _, ok := ev.(*kafka.Message); ok {
				t.Fatalf("consumer read a message without a group: %v", ev)
			}
			if kerr, ok := ev.(kafka.Error); ok {
				t.Logf("librdkafka reports: %v (code %d %v, fatal=%v)", kerr, kerr.Code(), kerr.Code(), kerr.IsFatal())
				checkQuoted(t, "librdkafka", "EagerAssignorsOnly", kerr.Error())
				if kerr.Code() != kafka.ErrInconsistentGroupProtocol {
					t.Errorf("error %v, want INCONSISTENT_GROUP_PROTOCOL", kerr.Code())
				}
				break
			}
		}
		if n := ckAssigned(t, c); n != 0 {
			t.Errorf("%d partitions assigned after the refusal, want 0", n)
		}
	})
}

// TestConfluentStaticMemberRestart restarts a consumer with the same
// group.instance.id. Under VAST the id is ignored: the new consumer joins as
// an ordinary member and the group rebalances (its generation increases;
// the old member, which as a static member sent no LeaveGroup, drops out
// when its session times out). Under the kafka profile (KIP-345 static
// membership) the new consumer takes the old one's place without a
// rebalance.
func TestConfluentStaticMemberRestart(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic, group, instance = "ck-static", "ck-static-group", "ck-instance-1"
		ckCreateTopic(t, b.Addr(), topic, 3)
		conf := func() *kafka.ConfigMap {
			return ckGroupConf(b.Addr(), group,
				"group.instance.id", instance,
				"session.timeout.ms", 6000, // Kafka's group.min.session.timeout.ms
				"max.poll.interval.ms", 6000)
		}
		stable := func(members int) func() bool {
			return func() bool {
				g, ok := b.Group(group)
				return ok && g.State == "Stable" && len(g.Members) == members
			}
		}

		c1 := ckConsumer(t, conf())
		if err := c1.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		ckPollUntil(t, func() bool { return ckAssigned(t, c1) == 3 && stable(1)() }, "first consumer has 3 partitions", c1)
		before, _ := b.Group(group)
		if err := c1.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		c2 := ckConsumer(t, conf())
		if err := c2.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatal(err)
		}
		ckPollUntil(t, func() bool {
			g, _ := b.Group(group)
			return ckAssigned(t, c2) == 3 && stable(1)() && g.Members[0].MemberID != before.Members[0].MemberID
		}, "restarted consumer has 3 partitions", c2)
		after, _ := b.Group(group)
		t.Logf("generation %d -> %d, member %s (instance %q) -> %s (instance %q)",
			before.Generation, after.Generation,
			before.Members[0].MemberID, before.Members[0].InstanceID,
			after.Members[0].MemberID, after.Members[0].InstanceID)
		switch profile {
		case "vast":
			if after.Generation <= before.Generation {
				t.Errorf("generation %d -> %d: want a rebalance (group.instance.id is ignored)", before.Generation, after.Generation)
			}
			if after.Members[0].InstanceID != "" {
				t.Errorf("member has instance id %q; VAST ignores it", after.Members[0].InstanceID)
			}
		case "kafka":
			if after.Generation != before.Generation {
				t.Errorf("generation %d -> %d: a static member's restart must not rebalance", before.Generation, after.Generation)
			}
			if after.Members[0].InstanceID != instance {
				t.Errorf("member has instance id %q, want %q", after.Members[0].InstanceID, instance)
			}
		}
	})
}

// TestConfluentCompression: a snappy-compressed batch is refused under VAST
// with UNSUPPORTED_COMPRESSION_TYPE (librdkafka does not retry it) and
// nothing is written; the kafka profile stores and serves it.
func TestConfluentCompression(t *testing.T) {
	t.Parallel()
	ckProfiles(t, func(t *testing.T, profile string, b *broker.Broker) {
		const topic = "ck-snappy"
		ckCreateTopic(t, b.Addr(), topic, 1)
		p := ckProducer(t, ckConf(b.Addr(), "compression.type", "snappy", "message.timeout.ms", 30000))
		value := []byte(strings.Repeat("compressible ", 1000)) // compresses well: librdkafka sends it compressed
		r := ckProduce(t, p, &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: ckPtr(topic), Partition: 0},
			Key:            []byte("k"),
			Value:          value,
		})[0].TopicPartition

		c := ckConsumer(t, ckConf(b.Addr(), "group.id", "ck-snappy-reader"))
		_, high, err := c.QueryWatermarkOffsets(topic, 0, int(ckTimeout/time.Millisecond))
		if err != nil {
			t.Fatalf("QueryWatermarkOffsets: %v", err)
		}
		if profile == "vast" {
			var kerr kafka.Error
			if r.Error == nil {
				t.Fatalf("snappy produce accepted at offset %d, want UNSUPPORTED_COMPRESSION_TYPE", r.Offset)
			}
			kerr, _ = r.Error.(kafka.Error)
			t.Logf("librdkafka reports: %v", r.Error)
			checkQuoted(t, "librdkafka", "NoCompression", r.Error.Error())
			if kerr.Code() != kafka.ErrUnsupportedCompressionType {
				t.Errorf("error %v, want UNSUPPORTED_COMPRESSION_TYPE", r.Error)
			}
			if high != 0 {
				t.Errorf("high watermark %d after the refusal, want 0", high)
			}
			return
		}
		if r.Error != nil {
			t.Fatalf("snappy produce under kafka: %v", r.Error)
		}
		if high != 1 {
			t.Errorf("high watermark %d, want 1", high)
		}
		if err := c.Assign([]kafka.TopicPartition{{Topic: ckPtr(topic), Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
			t.Fatal(err)
		}
		if m := ckPoll(t, c, 1)[0]; string(m.Value) != string(value) {
			t.Errorf("read back %d bytes, want the %d produced", len(m.Value), len(value))
		}
	})
}

// TestConfluentRefusalTexts runs librdkafka into the VAST profile's other
// refusals and compares what it reports with docs/troubleshooting.md's table.
func TestConfluentRefusalTexts(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 1}))
	report := func(t *testing.T, conf *kafka.ConfigMap, topic string, value []byte) error {
		p := ckProducer(t, conf)
		return ckProduce(t, p, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Value: value})[0].TopicPartition.Error
	}
	t.Run("MaxValueBytes", func(t *testing.T) {
		err := report(t, ckConf(b.Addr()), "orders", make([]byte, 130<<10))
		if err == nil {
			t.Fatal("a 130 KB value was accepted")
		}
		checkQuoted(t, "librdkafka", "MaxValueBytes", err.Error())
	})
	t.Run("NoAutoCreateTopics", func(t *testing.T) {
		err := report(t, ckConf(b.Addr(), "message.timeout.ms", 1000), "missing", []byte("x"))
		if err == nil {
			t.Fatal("a record for a missing topic was delivered")
		}
		checkQuoted(t, "librdkafka", "NoAutoCreateTopics", err.Error())
	})
	t.Run("NoIdempotence", func(t *testing.T) {
		var got []string
		p := ckProducer(t, ckConf(b.Addr(), "enable.idempotence", true, "message.timeout.ms", 5000))
		deadline := time.After(ckTimeout)
		for len(got) < 2 {
			select {
			case ev := <-p.Events():
				if e, ok := ev.(kafka.Error); ok {
					got = append(got, e.Error(), e.Code().String())
				}
			case <-deadline:
				t.Fatalf("no fatal error from the idempotent producer within %v; got %q", ckTimeout, got)
			}
		}
		tx := ckProducer(t, ckConf(b.Addr(), "enable.idempotence", true, "transactional.id", "billing-tx"))
		if err := tx.InitTransactions(ctxCK(t)); err != nil {
			got = append(got, err.Error())
		}
		checkQuoted(t, "librdkafka", "NoIdempotence", got...)
	})
	t.Run("MaxGroups", func(t *testing.T) {
		// 256 groups with a committed offset each, then a commit and a
		// join of a 257th: librdkafka's text speaks of a group's size.
		k := fixtures.Start(t, fixtures.Topic("orders", 1))
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 0, LeaderEpoch: -1})
		for i := range 256 {
			resp, err := k.Admin().CommitOffsets(ctxCK(t), fmt.Sprintf("g%03d", i), offs)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatalf("group %d of 256: %v", i+1, err)
			}
		}
		var got []string
		c := ckConsumer(t, ckConf(k.Addr(), "group.id", "one-too-many", "enable.auto.commit", false, "auto.offset.reset", "earliest"))
		topic := "orders"
		if _, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 0}}); err != nil {
			got = append(got, err.Error())
		}
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(ckTimeout); len(got) < 2 && time.Now().Before(deadline); {
			if e, ok := c.Poll(100).(kafka.Error); ok {
				got = append(got, e.Error())
			}
		}
		checkQuoted(t, "librdkafka", "MaxGroups", got...)
	})
}

func ckPtr[T any](v T) *T { return &v }

// ctxCK returns a context bounded by ckTimeout, cancelled with the test.
func ctxCK(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ckTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestStaticMembersShareTheFirstGeneration runs the start of librdkafka's
// static-membership test (0102) against the binary's kafka profile: two
// consumers with group.instance.id and a regex subscription, the second
// polled only between the first's polls. With Kafka's 3 s
// group.initial.rebalance.delay.ms, which the kafka profile has, both join
// the group's first generation: each is assigned once and nothing is
// revoked. With no delay the first forms a generation alone and the
// second's join starts a rebalance.
func TestStaticMembersShareTheFirstGeneration(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "vastfake")
	walkthroughBuild(t, bin, "github.com/vastfake/vastfake/cmd/vastfake")
	addr := walkthroughStartBinaryLines(t, bin, 1, "-listen", "127.0.0.1:0", "-profile", "kafka", "-topic", "static-orders:3")[0]

	// member counts the rebalance events its consumer's rebalance callback
	// saw, as 0102's does; Poll calls it.
	type member struct {
		c                 *kafka.Consumer
		assigned, revoked int
		partitions        int
	}
	members := make([]*member, 2)
	for i := range members {
		m := &member{c: ckConsumer(t, &kafka.ConfigMap{
			"bootstrap.servers": addr, "group.id": "static-group", "group.instance.id": fmt.Sprintf("consumer%d", i+1),
			"session.timeout.ms": 6000, "max.poll.interval.ms": 9000, "auto.offset.reset": "earliest",
		})}
		members[i] = m
		require.NoError(t, m.c.SubscribeTopics([]string{"^static-.*"}, func(c *kafka.Consumer, ev kafka.Event) error {
			switch e := ev.(type) {
			case kafka.AssignedPartitions:
				m.assigned++
				m.partitions = len(e.Partitions)
				return c.Assign(e.Partitions)
			case kafka.RevokedPartitions:
				m.revoked++
				return c.Unassign()
			}
			return nil
		}))
	}
	deadline := time.Now().Add(ckTimeout)
	for (members[0].assigned == 0 || members[1].assigned == 0) && time.Now().Before(deadline) {
		members[0].c.Poll(1000)
		members[1].c.Poll(0)
	}
	require.True(t, members[0].assigned > 0 && members[1].assigned > 0, "both members assigned within %v", ckTimeout)
	// A rebalance after the first generation would show as a revocation
	// within a heartbeat or two.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		members[0].c.Poll(500)
		members[1].c.Poll(0)
	}
	for i, m := range members {
		assert.Equal(t, 1, m.assigned, "consumer%d assignments", i+1)
		assert.Equal(t, 0, m.revoked, "consumer%d revocations", i+1)
	}
	assert.Equal(t, 3, members[0].partitions+members[1].partitions, "every partition assigned")
}

// TestProduceThroughABrokerDown: with three brokers and one replica per
// partition, a confluent-kafka-go producer with acks=all carries on while
// one broker is down (its partitions wait, the others are acknowledged)
// and after it is back; a consumer group then reads every acknowledged
// record once. (With three replicas each, acks=all waits everywhere for
// the down broker until it is fenced, as in Kafka:
// TestConfluentThroughAnElection.)
func TestProduceThroughABrokerDown(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t, broker.WithBrokers(3), broker.WithProfile("kafka"), broker.WithElectionDelay(time.Hour),
		broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 6, ReplicationFactor: 1}))
	down := b.BrokerIDs()[1]
	p := ckProducer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "acks": "all", "partitioner": "murmur2_random",
		"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})
	const n = 300
	for _, m := range ckProduce(t, p, ckKeyed("orders", 0, n/3)...) {
		require.NoError(t, m.TopicPartition.Error)
	}

	require.NoError(t, b.BrokerDown(down))
	reports := make(chan kafka.Event, n)
	for _, m := range ckKeyed("orders", n/3, n-n/3) {
		require.NoError(t, p.Produce(m, reports))
	}
	acked := map[int32]int{}
	timeout := time.After(ckTimeout)
	for others := 0; others == 0; {
		select {
		case ev := <-reports:
			m := ev.(*kafka.Message)
			require.NoError(t, m.TopicPartition.Error)
			require.NotEqual(t, down, b.LeaderOf("orders", m.TopicPartition.Partition), "acknowledged while its leader is down")
			acked[m.TopicPartition.Partition]++
			others++
		case <-timeout:
			t.Fatalf("no record acknowledged within %v while broker %d was down", ckTimeout, down)
		}
	}
	require.NoError(t, b.BrokerUp(down))
	for count := 1; count < n-n/3; count++ {
		select {
		case ev := <-reports:
			m := ev.(*kafka.Message)
			require.NoError(t, m.TopicPartition.Error)
			acked[m.TopicPartition.Partition]++
		case <-timeout:
			t.Fatalf("%d of %d delivery reports within %v", count, n-n/3, ckTimeout)
		}
	}
	for part := range int32(6) {
		if b.LeaderOf("orders", part) == down {
			assert.Positive(t, acked[part], "partition %d, led by the broker that was down, acknowledged once it was back", part)
		}
	}

	c := ckConsumer(t, &kafka.ConfigMap{"bootstrap.servers": b.Addr(), "group.id": "billing", "auto.offset.reset": "earliest"})
	require.NoError(t, c.Subscribe("orders", nil))
	seen := map[string]int{}
	for _, m := range ckPoll(t, c, n) {
		seen[string(m.Key)]++
	}
	require.Len(t, seen, n)
	for k, count := range seen {
		assert.Equal(t, 1, count, "%s read once", k)
	}
}
