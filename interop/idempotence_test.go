package interop_test

// Idempotent producers of sarama, librdkafka (confluent-kafka-go and the
// Confluent Python client) against the kafka profile, when the answers to
// some produce requests are lost after the records were stored: the broker
// drops the connection in place of the answer (broker.Fault.DropAnswer), the
// producer retries, and the records must end up stored exactly once, in
// order. The same run without idempotence must show the duplicates, so the
// tests can fail.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// lostAnswers is how many records each test sends, one at a time; the
// answers to records 5, 10 and 15 are dropped.
const lostAnswers = 20

// idemBroker starts a kafka-profile broker with the one-partition topic
// "orders".
func idemBroker(t *testing.T) *broker.Broker {
	return fixtures.StartBroker(t, broker.WithProfile("kafka"), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 1}))
}

// dropNextAnswer makes the broker drop the answer to the next Produce to
// "orders", after storing its records.
func dropNextAnswer(b *broker.Broker) {
	b.InjectFault(broker.Fault{API: kmsg.Produce, DropAnswer: true, Count: 1, Topic: "orders"})
}

// checkLostAnswers checks what "orders" holds after lostAnswers records,
// values "0" to "19", were sent with the answers to 5, 10 and 15 lost: each
// once, in order, for an idempotent producer; 5, 10 and 15 twice for one
// without idempotence. It also checks that three answers were dropped.
func checkLostAnswers(t *testing.T, b *broker.Broker, idempotent bool) {
	t.Helper()
	var got []string
	for _, r := range b.Records("orders", 0, 0) {
		got = append(got, string(r.Value))
	}
	want := make([]string, lostAnswers)
	for i := range want {
		want[i] = strconv.Itoa(i)
	}
	if idempotent {
		assert.Equal(t, want, got, "every record once, in order")
	} else {
		assert.Equal(t, slices.Concat(want[:6], want[5:11], want[10:16], want[15:]), got,
			"without idempotence the records whose answers were lost are stored twice")
	}
	dropped := 0
	for _, r := range b.Requests() {
		if r.API == kmsg.Produce && r.Fault && r.Closed {
			dropped++
		}
	}
	assert.Equal(t, 3, dropped, "answers dropped")
}

func TestSaramaIdempotentRetry(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			t.Parallel()
			b := idemBroker(t)
			cfg := saramaConfig()
			cfg.Producer.Idempotent = idempotent
			cfg.Net.MaxOpenRequests = 1 // sarama requires it with idempotence
			cfg.Producer.Retry.Max = 10
			p := saramaProducer(t, b.Addr(), cfg)
			for i := range lostAnswers {
				if i%5 == 0 && i > 0 {
					dropNextAnswer(b)
				}
				_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder(strconv.Itoa(i))})
				require.NoError(t, err, "record %d", i)
			}
			checkLostAnswers(t, b, idempotent)
		})
	}
}

func TestConfluentIdempotentRetry(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			t.Parallel()
			b := idemBroker(t)
			p := ckProducer(t, ckConf(b.Addr(), "enable.idempotence", idempotent, "linger.ms", 0,
				"retry.backoff.ms", 10, "reconnect.backoff.ms", 10, "reconnect.backoff.max.ms", 100,
				"message.timeout.ms", int(ckTimeout/time.Millisecond)))
			for i := range lostAnswers {
				if i%5 == 0 && i > 0 {
					dropNextAnswer(b)
				}
				r := ckProduce(t, p, &kafka.Message{
					TopicPartition: kafka.TopicPartition{Topic: ckPtr("orders"), Partition: 0},
					Value:          []byte(strconv.Itoa(i)),
				})[0]
				require.NoError(t, r.TopicPartition.Error, "record %d", i)
			}
			checkLostAnswers(t, b, idempotent)
		})
	}
}

// idemPython produces one record at a time, waiting for each delivery
// report, with the Confluent Python client (the librdkafka Debian ships).
// It reads the records' values from stdin, one per line, so that the Go
// test can drop answers between them: it prints "sent <value>" after each
// delivery and reads the next line only then.
const idemPython = `
import os, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
              "enable.idempotence": os.environ["IDEMPOTENT"] == "true",
              "linger.ms": 0, "retry.backoff.ms": 10, "message.timeout.ms": 60000})
errors = []
for line in sys.stdin:
    value = line.strip()
    p.produce("orders", value=value, partition=0, on_delivery=lambda err, msg: errors.append(err) if err else None)
    p.flush(60)
    if errors:
        print("error", errors[0], flush=True)
        sys.exit(1)
    print("sent", value, flush=True)
`

func TestConfluentPythonIdempotentRetry(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			t.Parallel()
			b := idemBroker(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			py := exec.CommandContext(ctx, pythonWithConfluent, "-c", idemPython)
			py.Env = append(walkthroughEnv(), "KAFKA_BOOTSTRAP="+b.Addr(), "IDEMPOTENT="+strconv.FormatBool(idempotent), "PYTHONDONTWRITEBYTECODE=1")
			stdin, err := py.StdinPipe()
			require.NoError(t, err)
			stdout, err := py.StdoutPipe()
			require.NoError(t, err)
			var stderr bytes.Buffer
			py.Stderr = &stderr
			py.WaitDelay = 10 * time.Second
			require.NoError(t, py.Start())
			lines := make([]byte, 0, 64)
			readLine := func() string {
				lines = lines[:0]
				var c [1]byte
				for {
					if _, err := stdout.Read(c[:]); err != nil {
						t.Fatalf("python: %v\nstderr:\n%s", err, walkthroughTail(stderr.String(), 20))
					}
					if c[0] == '\n' {
						return string(lines)
					}
					lines = append(lines, c[0])
				}
			}
			for i := range lostAnswers {
				if i%5 == 0 && i > 0 {
					dropNextAnswer(b)
				}
				_, err := fmt.Fprintln(stdin, i)
				require.NoError(t, err)
				require.Equal(t, "sent "+strconv.Itoa(i), readLine())
			}
			require.NoError(t, stdin.Close())
			if err := py.Wait(); err != nil {
				t.Fatalf("python: %v\nstderr:\n%s", err, walkthroughTail(stderr.String(), 20))
			}
			if strings.Contains(stderr.String(), "|PROTOERR|") {
				t.Errorf("librdkafka reported protocol errors:\n%s", walkthroughTail(stderr.String(), 20))
			}
			checkLostAnswers(t, b, idempotent)
		})
	}
}
