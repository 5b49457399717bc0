package interop_test

// SASL/SCRAM-SHA-512 with clients written by others, in the kafka profile:
// the Confluent Python client and confluent-kafka-go (librdkafka), kafkajs
// and sarama (its v1 and v0 handshakes) log in, produce and consume. In the
// audit profile the same login is a finding of rule PlainSASLOnly whose
// advice is in the client's own terms, and the app with that advice applied
// (PLAIN) runs clean.

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/fixtures"
)

const scramUser, scramPass = "scram-app", "scram-app-secret"

// scramBroker starts a broker of profile with the topic "orders" (3
// partitions) and scramUser, which gets PLAIN and both SCRAM credentials.
func scramBroker(t *testing.T, profile string) *broker.Broker {
	return fixtures.StartBroker(t, broker.WithProfile(profile), broker.WithTopics(broker.TopicSpec{Name: "orders", Partitions: 3}),
		broker.WithUsers(map[string]string{scramUser: scramPass}))
}

// saslEnv names the credentials and mechanism to the app scripts.
func saslEnv(mechanism string) []string {
	return []string{"KAFKA_SASL_MECHANISM=" + mechanism, "KAFKA_USERNAME=" + scramUser, "KAFKA_PASSWORD=" + scramPass}
}

// scramLogins counts the SCRAM logins that succeeded: SaslAuthenticate
// requests of scramUser answered without error, two per login.
func scramLogins(b *broker.Broker) int {
	n := 0
	for _, r := range b.Requests() {
		if r.API == 36 && r.User == scramUser && r.ErrorCode == 0 {
			n++
		}
	}
	return n / 2
}

// plainSASLFinding returns the advice of b's PlainSASLOnly finding, or "".
func plainSASLFinding(b *broker.Broker) string {
	for _, f := range b.Findings() {
		if f.Rule == "PlainSASLOnly" {
			return f.Advice
		}
	}
	return ""
}

// scramAppCase runs an app script with SCRAM-SHA-512 in the kafka profile,
// then in the audit profile, where the login is a finding with advice
// containing advice, then with PLAIN (the advice applied), which leaves no
// finding.
func scramAppCase(t *testing.T, dir, interpreter, script, mode, scram512, plain, advice string) {
	t.Run("kafka profile", func(t *testing.T) {
		b := scramBroker(t, "kafka")
		runAppEnv(t, b.Addr(), saslEnv(scram512), dir, interpreter, script, mode)
		assert.GreaterOrEqual(t, scramLogins(b), 1)
	})
	t.Run("audit profile", func(t *testing.T) {
		b := scramBroker(t, "audit")
		runAppEnv(t, b.Addr(), saslEnv(scram512), dir, interpreter, script, mode)
		assert.Contains(t, plainSASLFinding(b), advice)
		b = scramBroker(t, "audit")
		runAppEnv(t, b.Addr(), saslEnv(plain), dir, interpreter, script, mode)
		assert.Equal(t, []string{}, auditFindings(t, b), "the advice applied: PLAIN leaves no finding")
	})
}

// TestSCRAMConfluentPython runs the Python app with SCRAM-SHA-512 when the
// machine's librdkafka is 2.6.1 or later. Before 2.6.1 librdkafka repeats
// its nonce in the client-final message, which Kafka 4 refuses as RFC 5802
// says (Debian 12's librdkafka is 2.0.2): the login must then fail, with
// the request log and the errors of the audit report naming the client bug
// and the upgrade, while PLAIN works.
func TestSCRAMConfluentPython(t *testing.T) {
	t.Parallel()
	needConfluentPython(t)
	out, err := exec.Command(pythonWithConfluent, "-c", "import confluent_kafka; print(confluent_kafka.libversion()[1])").Output()
	require.NoError(t, err)
	libversion, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	require.NoError(t, err)
	if libversion >= 0x020601ff {
		scramAppCase(t, "audit", pythonWithConfluent, "app.py", "vast", "SCRAM-SHA-512", "PLAIN", "sasl.mechanism=PLAIN")
		return
	}
	t.Logf("librdkafka %#x predates 2.6.1: its SCRAM login must fail as against Kafka 4", libversion)
	b := scramBroker(t, "audit")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	login := exec.CommandContext(ctx, pythonWithConfluent, "-c", `
import os, sys
from confluent_kafka import Producer
def fail(err):
    print(err.str())
    sys.exit(0)
p = Producer({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"], "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": os.environ["KAFKA_USERNAME"],
              "sasl.password": os.environ["KAFKA_PASSWORD"], "error_cb": fail})
p.poll(30)
sys.exit("no error within 30 s")
`)
	login.Env = append(walkthroughEnv(), append(saslEnv("SCRAM-SHA-512"), "KAFKA_BOOTSTRAP="+b.Addr())...)
	got, err := login.CombinedOutput()
	require.NoError(t, err, "%s", got)
	assert.Contains(t, string(got), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
	var advice string
	for _, e := range b.Errors() {
		if e.API == "SASLAuthenticate" {
			advice = e.Advice
		}
	}
	assert.Contains(t, advice, "upgrade librdkafka, or the client built on it, to librdkafka 2.6.1 or later", "the audit report's errors name the client bug")
	assert.Contains(t, plainSASLFinding(b), "sasl.mechanism=PLAIN")
	b = scramBroker(t, "audit")
	runAppEnv(t, b.Addr(), saslEnv("PLAIN"), "audit", pythonWithConfluent, "app.py", "vast")
	assert.Equal(t, []string{}, auditFindings(t, b), "PLAIN, as the advice says, leaves no finding")
}

func TestSCRAMKafkaJS(t *testing.T) {
	t.Parallel()
	node := needKafkaJS(t)
	scramAppCase(t, "kafkajs", node, "audit.js", "", "scram-sha-512", "plain", "mechanism: 'plain'")
}

func TestSCRAMConfluentGo(t *testing.T) {
	t.Parallel()
	b := scramBroker(t, "kafka")
	sasl := []any{"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-512", "sasl.username", scramUser, "sasl.password", scramPass}
	p := ckProducer(t, ckConf(b.Addr(), sasl...))
	for _, m := range ckProduce(t, p, ckKeyed("orders", 0, 3)...) {
		require.NoError(t, m.TopicPartition.Error)
	}
	c := ckConsumer(t, ckGroupConf(b.Addr(), "ck-scram", sasl...))
	require.NoError(t, c.Subscribe("orders", nil))
	assert.Len(t, ckPoll(t, c, 3), 3)

	bad := ckConsumer(t, ckGroupConf(b.Addr(), "ck-scram", "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-512",
		"sasl.username", scramUser, "sasl.password", "wrong"))
	require.NoError(t, bad.Subscribe("orders", nil))
	assert.Equal(t, kafka.ErrAuthentication, ckWaitError(t, bad).Code())

	// VAST offers PLAIN only: librdkafka reports the refused mechanism, in
	// the words docs/troubleshooting.md quotes.
	vast := scramBroker(t, "vast")
	refused := ckConsumer(t, ckGroupConf(vast.Addr(), "ck-scram", sasl...))
	require.NoError(t, refused.Subscribe("orders", nil))
	kerr := ckWaitError(t, refused)
	assert.Equal(t, kafka.ErrAuthentication, kerr.Code())
	checkQuoted(t, "librdkafka", "PlainSASLOnly", kerr.Error())
}

// saramaSCRAM is sarama's SCRAMClient, which sarama leaves to the app;
// apps use xdg-go/scram, as sarama's own example does.
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, pass, authzID string) error {
	cl, err := s.hash.NewClient(user, pass, authzID)
	if err != nil {
		return err
	}
	s.conv = cl.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

func TestSCRAMSarama(t *testing.T) {
	t.Parallel()
	cfg := func(version int16, pass string) *sarama.Config {
		c := saramaConfig()
		c.Net.SASL.Enable = true
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.User, c.Net.SASL.Password = scramUser, pass
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: scram.SHA512} }
		c.Net.SASL.Version = version
		if version == sarama.SASLHandshakeV0 {
			c.ApiVersionsRequest = false // sarama's rule for a v0 handshake
		}
		return c
	}
	for _, v := range []int16{sarama.SASLHandshakeV1, sarama.SASLHandshakeV0} {
		t.Run(map[int16]string{sarama.SASLHandshakeV1: "v1 handshake", sarama.SASLHandshakeV0: "v0 handshake, raw tokens"}[v], func(t *testing.T) {
			b := scramBroker(t, "kafka")
			p := saramaProducer(t, b.Addr(), cfg(v, scramPass))
			for i := range 3 {
				_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "orders", Partition: int32(i), Value: sarama.StringEncoder("scram")})
				require.NoError(t, err)
			}
			cl := saramaClient(t, b.Addr(), cfg(v, scramPass))
			for p := range int32(3) {
				msgs, _ := saramaReadPartition(t, cl, "orders", p, 1)
				assert.Equal(t, "scram", string(msgs[0].Value))
			}
			assert.GreaterOrEqual(t, scramLogins(b), 2)
			_, err := sarama.NewClient([]string{b.Addr()}, cfg(v, "wrong"))
			assert.Error(t, err, "a wrong password")
		})
	}
	t.Run("audit advice", func(t *testing.T) {
		b := scramBroker(t, "audit")
		saramaProducer(t, b.Addr(), cfg(sarama.SASLHandshakeV1, scramPass)) // logs in to read Metadata
		assert.Contains(t, plainSASLFinding(b), "sarama.SASLTypePlaintext")
	})
}
