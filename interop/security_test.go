package interop_test

// Security with clients written by others: the seed 000 walkthrough in
// Python (librdkafka) with KAFKA_USERNAME/KAFKA_PASSWORD against the binary
// started with -user and exactly the policies the page names, a
// confluent-kafka-go (librdkafka) client denied by policies and refused for
// a wrong password, and sarama logging in with the v0 SaslHandshake and a
// raw SASL token.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

// TestSeedWalkthroughWithSASL runs the seed 000 page with KAFKA_USERNAME and
// KAFKA_PASSWORD set against the binary started with -user, -default-deny
// and the permissions the page lists: KafkaRead on the topic and the groups,
// KafkaDelete on the groups, plus what its setup and clean-up do (create
// topics on the view, write and delete the topic). The page must print
// exactly what it shows.
func TestSeedWalkthroughWithSASL(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command(pythonWithConfluent, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		msg := "TestSeedWalkthroughWithSASL needs " + pythonWithConfluent + " with confluent_kafka: " + err.Error() + ": " + strings.TrimSpace(string(out))
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	expected, err := os.ReadFile(filepath.Join("walkthrough", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vastfakeBin, deleteGroupBin := filepath.Join(dir, "vastfake"), filepath.Join(dir, "deletegroup")
	walkthroughBuild(t, vastfakeBin, "github.com/vastfake/vastfake/cmd/vastfake")
	walkthroughBuild(t, deleteGroupBin, "./cmd/deletegroup")

	const user, pass = "walkthrough", "walk-secret"
	const topic, groups = "vast:kafka:topic:vastfake:docs-consuming-orders", "vast:kafka:group:vastfake:docs-consuming-*"
	addr := walkthroughStartBinary(t, vastfakeBin, "-listen", "127.0.0.1:0", "-log-level", "info",
		"-user", user+":"+pass, "-user", "someone-else:other-secret", "-default-deny",
		"-policy", "allow walkthrough KafkaCreate vast:kafka:view:vastfake",
		"-policy", "allow walkthrough KafkaWrite "+topic,
		"-policy", "allow walkthrough KafkaRead "+topic,
		"-policy", "allow walkthrough KafkaDelete "+topic,
		"-policy", "allow walkthrough KafkaRead "+groups,
		"-policy", "allow walkthrough KafkaDelete "+groups,
	)

	// The listener really requires SASL: no credentials, or wrong ones,
	// get nowhere.
	for _, opts := range [][]kgo.Opt{
		nil,
		{kgo.SASL(plain.Auth{User: user, Pass: "wrong"}.AsMechanism())},
	} {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = kadm.NewClient(cl).ListTopics(ctx)
		cancel()
		cl.Close()
		if err == nil {
			t.Fatalf("listing topics with %d SASL options succeeded on a listener that requires SASL", len(opts))
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	py := exec.CommandContext(ctx, pythonWithConfluent, "walkthrough.py")
	py.Dir = "walkthrough"
	py.Env = append(walkthroughEnv(),
		"KAFKA_BOOTSTRAP="+addr,
		"KAFKA_USERNAME="+user,
		"KAFKA_PASSWORD="+pass,
		"VASTFAKE_DELETEGROUP="+deleteGroupBin,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	var stdout, stderr bytes.Buffer
	py.Stdout, py.Stderr = &stdout, &stderr
	py.WaitDelay = 10 * time.Second
	if err := py.Run(); err != nil {
		t.Fatalf("walkthrough.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), walkthroughTail(stderr.String(), 40))
	}
	if got := stdout.String(); got != string(expected) {
		t.Fatalf("walkthrough.py printed\n%s\nthe page shows\n%s\nstderr:\n%s", got, expected, walkthroughTail(stderr.String(), 40))
	}
	if strings.Contains(stderr.String(), "|PROTOERR|") {
		t.Errorf("librdkafka reported protocol errors:\n%s", walkthroughTail(stderr.String(), 20))
	}
}

// ckSASLConf is ckConf for SASL_PLAINTEXT with PLAIN.
func ckSASLConf(addr, user, pass string, kv ...any) *kafka.ConfigMap {
	return ckConf(addr, append([]any{
		"security.protocol", "SASL_PLAINTEXT",
		"sasl.mechanism", "PLAIN",
		"sasl.username", user,
		"sasl.password", pass,
	}, kv...)...)
}

// ckWaitError polls c until an error event arrives and returns it.
func ckWaitError(t *testing.T, c *kafka.Consumer) kafka.Error {
	t.Helper()
	deadline := time.Now().Add(ckTimeout)
	for time.Now().Before(deadline) {
		if ev, ok := c.Poll(100).(kafka.Error); ok {
			return ev
		}
	}
	t.Fatalf("no error event within %v", ckTimeout)
	return kafka.Error{}
}

// TestConfluentSASLAndPolicies authenticates librdkafka with SASL/PLAIN and
// checks the errors it surfaces for a denied write, a denied group, a
// wrong password and missing credentials.
func TestConfluentSASLAndPolicies(t *testing.T) {
	t.Parallel()
	const topic, audit = "ck-sasl-orders", "ck-sasl-audit"
	b := fixtures.StartBroker(t,
		broker.WithTopics(broker.TopicSpec{Name: topic, Partitions: 1}, broker.TopicSpec{Name: audit, Partitions: 1}),
		broker.WithUsers(map[string]string{"app": "app-secret"}),
		broker.WithPolicies(
			broker.Deny("app", broker.KafkaWrite, broker.TopicResource(broker.DefaultView, audit)),
			broker.Deny("app", broker.KafkaRead, broker.GroupResource(broker.DefaultView, "ck-sasl-forbidden")),
		))
	logged := func(api kmsg.Key, match func(broker.RequestRecord) bool) bool {
		for _, r := range b.Requests() {
			if r.API == api && match(r) {
				return true
			}
		}
		return false
	}

	t.Run("produce and consume as app; a denied write", func(t *testing.T) {
		p := ckProducer(t, ckSASLConf(b.Addr(), "app", "app-secret", "acks", "all"))
		reports := ckProduce(t, p, ckKeyed(topic, 0, 3)...)
		for _, m := range reports {
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery to %s: %v", topic, m.TopicPartition.Error)
			}
		}
		denied := ckProduce(t, p, ckKeyed(audit, 0, 1)...)
		var ckErr kafka.Error
		if !errors.As(denied[0].TopicPartition.Error, &ckErr) || ckErr.Code() != kafka.ErrTopicAuthorizationFailed {
			t.Fatalf("delivery to %s: %v, want TOPIC_AUTHORIZATION_FAILED", audit, denied[0].TopicPartition.Error)
		}
		if !logged(kmsg.Produce, func(r broker.RequestRecord) bool {
			return r.User == "app" && strings.Contains(r.Denied, "deny app KafkaWrite vast:kafka:topic:vastfake:"+audit)
		}) {
			t.Error("the request log does not name the policy that denied the write")
		}

		c := ckConsumer(t, ckGroupConf(b.Addr(), "ck-sasl-billing",
			"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN", "sasl.username", "app", "sasl.password", "app-secret"))
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		if got := ckPoll(t, c, 3); len(got) != 3 {
			t.Fatalf("consumed %d of 3", len(got))
		}
	})

	t.Run("a group without KafkaRead", func(t *testing.T) {
		c := ckConsumer(t, ckGroupConf(b.Addr(), "ck-sasl-forbidden",
			"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN", "sasl.username", "app", "sasl.password", "app-secret"))
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		if ev := ckWaitError(t, c); ev.Code() != kafka.ErrGroupAuthorizationFailed {
			t.Fatalf("consumer error %v (code %v), want GROUP_AUTHORIZATION_FAILED", ev, ev.Code())
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		c := ckConsumer(t, ckGroupConf(b.Addr(), "ck-sasl-billing",
			"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN", "sasl.username", "app", "sasl.password", "wrong"))
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		ev := ckWaitError(t, c)
		if ev.Code() != kafka.ErrAuthentication {
			t.Fatalf("consumer error %v (code %v), want _AUTHENTICATION", ev, ev.Code())
		}
		if !strings.Contains(ev.Error(), "Invalid username or password") {
			t.Errorf("the broker's message does not reach the app: %v", ev)
		}
	})

	t.Run("no credentials", func(t *testing.T) {
		c := ckConsumer(t, ckGroupConf(b.Addr(), "ck-sasl-billing"))
		if err := c.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		ev := ckWaitError(t, c)
		t.Logf("librdkafka without credentials: %v (code %v)", ev, ev.Code())
		waitFor(t, testTimeout, func() bool {
			return logged(kmsg.Metadata, func(r broker.RequestRecord) bool { return r.Closed && r.User == "" })
		}, "a Metadata request before authentication, refused and logged")
	})
}

// TestSaramaSASLHandshakeV0 logs in with sarama's v0 SaslHandshake, after
// which the SASL token travels as a raw frame (KIP-152), and with a wrong
// password, which closes the connection.
func TestSaramaSASLHandshakeV0(t *testing.T) {
	t.Parallel()
	b := fixtures.StartBroker(t,
		broker.WithTopics(broker.TopicSpec{Name: "sarama-sasl", Partitions: 1}),
		broker.WithUsers(map[string]string{"app": "app-secret"}))
	cfg := func(pass string) *sarama.Config {
		c := saramaConfig()
		c.Net.SASL.Enable = true
		c.Net.SASL.Mechanism = sarama.SASLTypePlaintext
		c.Net.SASL.Version = sarama.SASLHandshakeV0
		c.ApiVersionsRequest = false // sarama's rule for a v0 handshake
		c.Net.SASL.User, c.Net.SASL.Password = "app", pass
		return c
	}
	p := saramaProducer(t, b.Addr(), cfg("app-secret"))
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-sasl", Value: sarama.StringEncoder("v0")}); err != nil {
		t.Fatalf("produce after a v0 handshake: %v", err)
	}
	raw := false
	for _, r := range b.Requests() {
		raw = raw || r.API == kmsg.SASLAuthenticate && r.Version == -1 && r.User == "app" && !r.Closed
	}
	if !raw {
		t.Error("no raw SASL token logged")
	}

	if _, err := sarama.NewClient([]string{b.Addr()}, cfg("wrong")); err == nil {
		t.Fatal("sarama connected with a wrong password")
	}
	waitFor(t, testTimeout, func() bool {
		for _, r := range b.Requests() {
			if r.API == kmsg.SASLAuthenticate && r.Version == -1 && r.Closed && r.ErrorCode == kerr.SaslAuthenticationFailed.Code {
				return true
			}
		}
		return false
	}, "the refused raw token in the request log")
}
