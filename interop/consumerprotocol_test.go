package interop_test

// confluent-kafka-go (librdkafka) with group.protocol=consumer, the KIP-848
// consumer group protocol: served in the kafka and audit profiles (the
// audit profile records it under ClassicGroupsOnly), not advertised in the
// VAST profile, where librdkafka waits for an assignment that never comes.

import (
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/fixtures"
)

// ckConsumerProtocolConf is a librdkafka group consumer on the KIP-848
// protocol. heartbeat.interval.ms, session.timeout.ms and
// partition.assignment.strategy are the broker's to decide with it, and
// librdkafka refuses them.
func ckConsumerProtocolConf(addr, group string, kv ...any) *kafka.ConfigMap {
	return ckConf(addr, append([]any{
		"group.id", group,
		"group.protocol", "consumer",
		"auto.offset.reset", "earliest",
		"enable.auto.commit", false,
	}, kv...)...)
}

// TestConfluentConsumerProtocol: in the kafka and audit profiles two
// librdkafka members with group.protocol=consumer share a topic while
// records flow, one leaves, the other takes its partitions; every record is
// read at least once and the final commits are at the end offsets. The
// audit profile records the KIP-848 requests with librdkafka's advice.
func TestConfluentConsumerProtocol(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{"kafka", "audit"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			const topic, group = "ck848", "ck848-g"
			b := fixtures.StartBroker(t, broker.WithProfile(profile),
				broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 4}),
				broker.WithConsumerGroupTimeouts(coordinator.DefaultConsumerSessionTimeout, 100*time.Millisecond))
			p := ckProducer(t, ckConf(b.Addr()))
			produced := 0
			produce := func(n int) {
				ckProduce(t, p, ckKeyed(topic, produced, n)...)
				produced += n
			}
			seen := map[string]bool{}
			poll := func(cs ...*kafka.Consumer) {
				for _, c := range cs {
					switch ev := c.Poll(20).(type) {
					case *kafka.Message:
						seen[string(ev.Key)] = true
					case kafka.Error:
						if ev.IsFatal() {
							t.Fatalf("consumer error: %v", ev)
						}
						t.Logf("consumer error: %v", ev)
					}
				}
			}
			until := func(what string, cond func() bool, cs ...*kafka.Consumer) {
				t.Helper()
				deadline := time.Now().Add(ckTimeout)
				for !cond() {
					if time.Now().After(deadline) {
						t.Fatalf("not within %v: %s", ckTimeout, what)
					}
					poll(cs...)
				}
			}
			stable := func(members int) func() bool {
				return func() bool {
					g, ok := b.Group(group)
					return ok && g.Type == "consumer" && g.State == "Stable" && len(g.Members) == members
				}
			}

			c1 := ckConsumer(t, ckConsumerProtocolConf(b.Addr(), group))
			if err := c1.SubscribeTopics([]string{topic}, nil); err != nil {
				t.Fatal(err)
			}
			produce(20)
			until("c1 alone holds every partition", func() bool { return stable(1)() && ckAssigned(t, c1) == 4 }, c1)
			c2 := ckConsumer(t, ckConsumerProtocolConf(b.Addr(), group))
			if err := c2.SubscribeTopics([]string{topic}, nil); err != nil {
				t.Fatal(err)
			}
			produce(20)
			until("two members share the partitions", func() bool {
				return stable(2)() && ckAssigned(t, c1) == 2 && ckAssigned(t, c2) == 2
			}, c1, c2)
			produce(20)
			until("every record so far read", func() bool { return len(seen) == produced }, c1, c2)
			if _, err := c2.Commit(); err != nil && !strings.Contains(err.Error(), "No offset stored") {
				t.Logf("c2 commit: %v", err)
			}
			if err := c2.Close(); err != nil {
				t.Fatalf("c2 close: %v", err)
			}
			produce(20)
			until("c1 takes the partitions c2 left", func() bool { return stable(1)() && ckAssigned(t, c1) == 4 }, c1)
			until("every record read", func() bool { return len(seen) == produced }, c1)
			until("final commits at the end offsets", func() bool {
				if _, err := c1.Commit(); err != nil && !strings.Contains(err.Error(), "No offset stored") {
					t.Logf("c1 commit: %v", err)
				}
				for part := int32(0); part < 4; part++ {
					_, high, err := c1.QueryWatermarkOffsets(topic, part, 5000)
					if err != nil {
						return false
					}
					off, ok := b.CommittedOffset(group, topic, part)
					if high > 0 && (!ok || off != high) {
						return false
					}
				}
				return true
			}, c1)

			var finding *broker.Finding
			for _, f := range b.Findings() {
				if f.Rule == "ClassicGroupsOnly" {
					finding = &f
				}
			}
			if profile == "audit" {
				if finding == nil {
					t.Fatal("the audit profile records the KIP-848 requests under ClassicGroupsOnly")
				}
				if !strings.Contains(finding.Advice, "group.protocol=classic") {
					t.Errorf("advice %q does not speak librdkafka's terms", finding.Advice)
				}
			} else if finding != nil {
				t.Errorf("kafka profile: unexpected finding %+v", finding)
			}
		})
	}
}

// TestConfluentConsumerProtocolOnVAST: VAST does not advertise
// ConsumerGroupHeartbeat, and a librdkafka consumer with
// group.protocol=consumer gets no assignment there: it keeps waiting,
// reports no error event, and the broker holds no group for it. Only its
// debug log (debug=cgrp) says why. The wait is bounded: five seconds,
// many of librdkafka's coordinator retries.
func TestConfluentConsumerProtocolOnVAST(t *testing.T) {
	t.Parallel()
	const topic, group = "ck848-vast", "ck848-vast-g"
	b := fixtures.StartBroker(t, broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 2}))
	p := ckProducer(t, ckConf(b.Addr()))
	ckProduce(t, p, ckKeyed(topic, 0, 5)...)
	c := ckConsumer(t, ckConsumerProtocolConf(b.Addr(), group, "debug", "cgrp", "go.logs.channel.enable", true))
	if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	var errs []string
	const why = "ConsumerGroupHeartbeatRequest not supported by broker"
	explained := ""
	for time.Now().Before(deadline) {
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			t.Fatalf("read %s without an assignment", ev.TopicPartition)
		case kafka.Error:
			errs = append(errs, ev.Error())
		}
		for drained := false; !drained; {
			select {
			case l := <-c.Logs():
				if explained == "" && strings.Contains(l.Message, why) {
					explained = l.Message
				}
			default:
				drained = true
			}
		}
	}
	if len(errs) > 0 {
		t.Errorf("librdkafka reported errors; the documented behaviour is a silent wait: %v", errs)
	}
	if explained == "" {
		t.Errorf("no debug line says %q", why)
	}
	t.Logf("the debug line that explains it: %s", explained)
	if n := ckAssigned(t, c); n != 0 {
		t.Fatalf("assigned %d partitions on VAST", n)
	}
	if _, ok := b.Group(group); ok {
		t.Error("the broker made a group for a protocol it does not serve")
	}
}
