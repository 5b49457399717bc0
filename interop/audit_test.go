package interop_test

// Audit mode with every client: the app scenario (ten orders produced, read
// back in a consumer group, committed) at the client's defaults against the
// audit profile succeeds in full and causes exactly the findings those
// defaults meet on VAST; with docs/client-settings.md's settings for VAST
// it causes none.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

const auditOrders = 10

// auditBroker starts a broker in the audit profile with the topic orders.
func auditBroker(t *testing.T) *broker.Broker {
	return fixtures.StartBroker(t, broker.WithProfile("audit"), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3}))
}

// auditFindings lists b's findings as "Rule kind topic group", sorted, and
// checks that the audit refused nothing.
func auditFindings(t *testing.T, b *broker.Broker) []string {
	t.Helper()
	assert.Empty(t, b.Refusals(), "audit mode refuses nothing")
	out := []string{}
	for _, f := range b.Findings() {
		assert.NotEmpty(t, f.Advice)
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", f.Rule, f.Kind, f.Topic, f.Group)))
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// auditSoftware returns the client software names the findings saw.
func auditSoftware(b *broker.Broker) []string {
	var out []string
	for _, f := range b.Findings() {
		out = append(out, f.ClientSoftware)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// ---- confluent-kafka-go ----

func confluentApp(t *testing.T, addr string, producer, consumer kafka.ConfigMap) {
	t.Helper()
	producer["bootstrap.servers"], consumer["bootstrap.servers"] = addr, addr
	consumer["group.id"], consumer["auto.offset.reset"], consumer["enable.auto.commit"] = "billing", "earliest", false
	p := ckProducer(t, &producer)
	for _, m := range ckProduce(t, p, ckKeyed("orders", 0, auditOrders)...) {
		require.NoError(t, m.TopicPartition.Error)
	}
	c := ckConsumer(t, &consumer)
	require.NoError(t, c.Subscribe("orders", nil))
	require.Len(t, ckPoll(t, c, auditOrders), auditOrders)
	_, err := c.Commit()
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

func TestAuditConfluentGo(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		b := auditBroker(t)
		confluentApp(t, b.Addr(), kafka.ConfigMap{}, kafka.ConfigMap{})
		// librdkafka's defaults are VAST's: no idempotence, no compression,
		// range,roundrobin, fetch.min.bytes=1.
		assert.Equal(t, []string{}, auditFindings(t, b))
	})
	t.Run("cooperative-sticky", func(t *testing.T) {
		b := auditBroker(t)
		confluentApp(t, b.Addr(), kafka.ConfigMap{"enable.idempotence": true, "compression.type": "lz4"},
			kafka.ConfigMap{"partition.assignment.strategy": "cooperative-sticky"})
		assert.Equal(t, []string{
			"EagerAssignorsOnly refused  billing",
			"NoCompression refused orders",
			"NoIdempotence refused",
			"NoIdempotence refused orders",
		}, auditFindings(t, b))
		assert.Equal(t, []string{"confluent-kafka-go"}, auditSoftware(b))
		for _, f := range b.Findings() {
			if f.Rule == "NoCompression" {
				assert.Contains(t, f.Advice, "set compression.type=none (compression.codec is its alias")
			}
		}
	})
	t.Run("vast settings", func(t *testing.T) {
		b := auditBroker(t)
		confluentApp(t, b.Addr(), kafka.ConfigMap{"enable.idempotence": false, "compression.type": "none"},
			kafka.ConfigMap{"partition.assignment.strategy": "range,roundrobin"})
		assert.Equal(t, []string{}, auditFindings(t, b))
	})
}

// ---- sarama ----

// saramaApp runs the app with cfg (NewConfig and the edits a SyncProducer
// and a group consumer require).
func saramaApp(t *testing.T, addr string, cfg *sarama.Config) {
	t.Helper()
	cfg.Producer.Return.Successes = true // a SyncProducer needs it
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	require.NoError(t, err)
	defer p.Close()
	for i := range auditOrders {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Key: sarama.StringEncoder(key(i)), Value: sarama.StringEncoder(strings.Repeat(value(i), 20))})
		require.NoError(t, err)
	}
	g, err := sarama.NewConsumerGroup([]string{addr}, "billing", cfg)
	require.NoError(t, err)
	defer g.Close()
	h := &auditHandler{want: auditOrders, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{"orders"}, h); err != nil {
				return
			}
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatalf("sarama read %d of %d orders", h.count(), auditOrders)
	}
}

type auditHandler struct {
	mu   sync.Mutex
	seen int
	want int
	done chan struct{}
}

func (h *auditHandler) count() int { h.mu.Lock(); defer h.mu.Unlock(); return h.seen }

func (h *auditHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *auditHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *auditHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		s.Commit()
		h.mu.Lock()
		h.seen++
		if h.seen == h.want {
			close(h.done)
		}
		h.mu.Unlock()
	}
	return nil
}

func TestAuditSarama(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		b := auditBroker(t)
		saramaApp(t, b.Addr(), sarama.NewConfig())
		// sarama's defaults are VAST's (no idempotence, no compression, the
		// range strategy, Fetch.Min=1), but its partition consumer asks for
		// the newest offset as it starts, to check its starting offset: on
		// VAST that answer may trail what the app just produced, and an
		// offset past it is "out of range" (sarama then restarts from
		// Consumer.Offsets.Initial). No setting avoids the lookup.
		assert.Equal(t, []string{"StaleEndOffset differs orders"}, auditFindings(t, b))
	})
	t.Run("vast settings", func(t *testing.T) {
		b := auditBroker(t)
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_6_0_0
		cfg.Producer.Idempotent = false
		cfg.Producer.Compression = sarama.CompressionNone
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
		saramaApp(t, b.Addr(), cfg)
		assert.Equal(t, []string{"StaleEndOffset differs orders"}, auditFindings(t, b), "the newest-offset lookup, as above")
	})
	t.Run("compression and sticky", func(t *testing.T) {
		b := auditBroker(t)
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V3_6_0_0
		cfg.Producer.Compression = sarama.CompressionGZIP
		cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
		saramaApp(t, b.Addr(), cfg)
		assert.Equal(t, []string{"NoCompression refused orders", "StaleEndOffset differs orders"}, auditFindings(t, b),
			"sarama's sticky strategy is the eager one, VAST takes it")
		assert.Equal(t, []string{"sarama"}, auditSoftware(b))
		for _, f := range b.Findings() {
			if f.Rule == "NoCompression" {
				assert.Equal(t, "set config.Producer.Compression = sarama.CompressionNone", f.Advice)
			}
		}
	})
}

// ---- kafka-go ----

func kafkaGoApp(t *testing.T, addr string, w *kafkago.Writer, rc kafkago.ReaderConfig) {
	t.Helper()
	w.Addr, w.Topic = kafkago.TCP(addr), "orders"
	defer w.Close()
	var msgs []kafkago.Message
	for i := range auditOrders {
		msgs = append(msgs, kafkago.Message{Key: []byte(key(i)), Value: []byte(strings.Repeat(value(i), 20))})
	}
	require.NoError(t, w.WriteMessages(ctxT(t), msgs...))
	rc.Brokers, rc.GroupID, rc.Topic, rc.StartOffset = []string{addr}, "billing", "orders", kafkago.FirstOffset
	r := kafkago.NewReader(rc)
	defer r.Close()
	for range auditOrders {
		m, err := r.FetchMessage(ctxT(t))
		require.NoError(t, err)
		require.NoError(t, r.CommitMessages(ctxT(t), m))
	}
}

func TestAuditKafkaGo(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		b := auditBroker(t)
		kafkaGoApp(t, b.Addr(), &kafkago.Writer{}, kafkago.ReaderConfig{})
		// kafka-go's defaults are VAST's (no compression, range and round
		// robin balancers, MinBytes 1); its group reader lists the last
		// offset of each partition it is given, right after the app
		// produced: on VAST that may trail. No setting avoids it.
		assert.Equal(t, []string{"StaleEndOffset differs orders"}, auditFindings(t, b))
	})
	t.Run("compression and min bytes", func(t *testing.T) {
		b := auditBroker(t)
		kafkaGoApp(t, b.Addr(), &kafkago.Writer{Compression: kafkago.Snappy}, kafkago.ReaderConfig{MinBytes: 10_000, MaxBytes: 1 << 20, MaxWait: 50 * time.Millisecond})
		assert.Equal(t, []string{"NoCompression refused orders", "NoDelayedFetch differs orders", "StaleEndOffset differs orders"}, auditFindings(t, b))
	})
}

// ---- the Confluent Python client and kafkajs, as separate processes ----

// runApp runs an app script with KAFKA_BOOTSTRAP and checks it printed
// "ok 10".
func runApp(t *testing.T, addr, dir, name string, args ...string) {
	t.Helper()
	runAppEnv(t, addr, nil, dir, name, args...)
}

// runAppEnv is runApp with more environment variables.
func runAppEnv(t *testing.T, addr string, env []string, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(append(walkthroughEnv(), "PYTHONDONTWRITEBYTECODE=1", "KAFKA_BOOTSTRAP="+addr), env...)
	require.NoError(t, cmd.Run(), "%s %v\nstdout:\n%s\nstderr:\n%s", name, args, stdout.String(), walkthroughTail(stderr.String(), 30))
	assert.Equal(t, fmt.Sprintf("ok %d\n", auditOrders), stdout.String())
}

func TestAuditConfluentPython(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	t.Run("defaults", func(t *testing.T) {
		b := auditBroker(t)
		runApp(t, b.Addr(), "audit", pythonWithConfluent, "app.py", "defaults")
		assert.Equal(t, []string{"EagerAssignorsOnly refused  billing-py"}, auditFindings(t, b))
		require.NotEmpty(t, b.Findings())
		f := b.Findings()[0]
		assert.Equal(t, "confluent-kafka-python", f.ClientSoftware)
		assert.Equal(t, "set partition.assignment.strategy=range (or range,roundrobin, the default)", f.Advice)
	})
	t.Run("vast settings", func(t *testing.T) {
		b := auditBroker(t)
		runApp(t, b.Addr(), "audit", pythonWithConfluent, "app.py", "vast")
		assert.Equal(t, []string{}, auditFindings(t, b))
	})
}

func TestAuditKafkaJS(t *testing.T) {
	t.Parallel()
	node := needKafkaJS(t)
	b := auditBroker(t)
	runApp(t, b.Addr(), "kafkajs", node, "audit.js")
	// kafkajs's defaults are VAST's: no idempotence, no compression, the
	// eager RoundRobinAssigner, minBytes 1.
	assert.Equal(t, []string{}, auditFindings(t, b))

}

// TestAuditBinaryPythonApp runs the vastfake binary with -profile audit and
// -audit-report, points the Python app at it unchanged, stops the binary
// with SIGTERM, and reads the report it printed and wrote.
func TestAuditBinaryPythonApp(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "vastfake")
	walkthroughBuild(t, bin, "github.com/vastfake/vastfake/cmd/vastfake")
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-profile", "audit", "-topic", "orders:3",
		"-audit-report", filepath.Join(dir, "report"), "-log-level", "warn")
	cmd.Env = walkthroughEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	runApp(t, addr, "audit", pythonWithConfluent, "app.py", "defaults")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "vastfake exits 0 on SIGTERM")
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Equal(t, "\n"+string(md), string(rest), "the report on stdout")
	assert.Contains(t, string(md), "| refused | EagerAssignorsOnly | confluent-kafka-python ")
	assert.Contains(t, string(md), "set partition.assignment.strategy=range")
	var report broker.AuditReport
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &report))
	require.Len(t, report.Findings, 1)
	assert.Equal(t, "billing-py", report.Findings[0].Group)
	assert.Equal(t, "billing-py", report.Findings[0].ClientID)
}

// saramaProduce produces the orders with sarama at version v, gzip, and
// the client id "orders-app". Below 2.4 it sends no ApiVersions, as sarama
// before 1.40 did at any version below 2.4 (its default was 2.1).
func saramaProduce(t *testing.T, addr string, v sarama.KafkaVersion, value func(int) []byte) {
	cfg := sarama.NewConfig()
	cfg.ClientID, cfg.Version = "orders-app", v
	cfg.ApiVersionsRequest = v.IsAtLeast(sarama.V2_4_0_0)
	cfg.Producer.Return.Successes, cfg.Producer.Compression = true, sarama.CompressionGZIP
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	require.NoError(t, err)
	defer p.Close()
	for i := range auditOrders {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Key: sarama.StringEncoder(key(i)), Value: sarama.ByteEncoder(value(i))})
		require.NoError(t, err)
	}
}

// TestAuditRecognisesClients runs each client this machine has with its own
// client id ("orders-app") and a compressed producer: whether the client names
// itself in ApiVersions (kgo, librdkafka, sarama) or is recognised by the
// versions it asks for (kafkajs, kafka-python, kafka-go), the finding names
// the client and its advice speaks the client's own setting. The Java client
// names itself "apache-kafka-java" the same way; it is not run here (no
// Maven repository), broker's TestFingerprint covers its advice.
func TestAuditRecognisesClients(t *testing.T) {
	t.Parallel()
	const clientID = "orders-app"
	compressible := func(i int) []byte { return []byte(strings.Repeat(value(i), 20)) }
	for _, tc := range []struct {
		client, software, advice string
		produce                  func(t *testing.T, addr string)
	}{
		{"kgo", "kgo", "kgo.ProducerBatchCompression(kgo.NoCompression())", func(t *testing.T, addr string) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID),
				kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.DisableIdempotentWrite())
			require.NoError(t, err)
			defer cl.Close()
			for i := range auditOrders {
				require.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "orders", Key: []byte(key(i)), Value: compressible(i)}).FirstErr())
			}
		}},
		{"confluent-kafka-go", "confluent-kafka-go", "compression.type=none", func(t *testing.T, addr string) {
			p := ckProducer(t, &kafka.ConfigMap{"bootstrap.servers": addr, "client.id": clientID, "compression.type": "gzip"})
			for _, m := range ckProduce(t, p, ckKeyed("orders", 0, auditOrders)...) {
				require.NoError(t, m.TopicPartition.Error)
			}
		}},
		{"sarama", "sarama", "sarama.CompressionNone", func(t *testing.T, addr string) {
			saramaProduce(t, addr, sarama.V3_6_0_0, compressible)
		}},
		{"sarama without ApiVersions", "sarama (recognised by its requests)", "sarama.CompressionNone", func(t *testing.T, addr string) {
			saramaProduce(t, addr, sarama.V2_1_0_0, compressible)
		}},
		{"kafka-go", "kafka-go (recognised by its requests)", "Writer.Compression", func(t *testing.T, addr string) {
			w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: "orders", Compression: kafkago.Gzip, RequiredAcks: kafkago.RequireAll,
				Transport: &kafkago.Transport{ClientID: clientID}}
			defer w.Close()
			var msgs []kafkago.Message
			for i := range auditOrders {
				msgs = append(msgs, kafkago.Message{Key: []byte(key(i)), Value: compressible(i)})
			}
			require.NoError(t, w.WriteMessages(ctxT(t), msgs...))
		}},
		{"kafkajs", "kafkajs (recognised by its requests)", "CompressionTypes.None", func(t *testing.T, addr string) {
			runApp(t, addr, "kafkajs", needKafkaJS(t), "audit.js", "gzip")
		}},
		{"kafka-python", "kafka-python (recognised by its requests)", "compression_type", func(t *testing.T, addr string) {
			if out, err := exec.Command(pythonWithConfluent, "-c", "import kafka").CombinedOutput(); err != nil {
				msg := "needs " + pythonWithConfluent + " with kafka-python (apt-get install -y python3-kafka): " + strings.TrimSpace(string(out))
				if os.Getenv("CI") != "" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			runApp(t, addr, "audit", pythonWithConfluent, "kafka_python_app.py")
		}},
	} {
		t.Run(tc.client, func(t *testing.T) {
			b := auditBroker(t)
			tc.produce(t, b.Addr())
			assert.Equal(t, []string{"NoCompression refused orders"}, auditFindings(t, b))
			for _, f := range b.Findings() {
				assert.Equal(t, tc.software, f.ClientSoftware)
				assert.NotEqual(t, "produce uncompressed batches (compression.type=none)", f.Advice, "the general advice, not the client's")
				assert.Contains(t, f.Advice, tc.advice)
			}
		})
	}
}
