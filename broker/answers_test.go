package broker

import (
	"fmt"
	"math"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// fillAnswer fills every field of v at any depth: integers at values whose
// varints are widest, strings and byte arrays of n bytes, arrays of n
// elements, nullable fields set.
func fillAnswer(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillAnswer(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAnswer(v.Field(i), n)
			}
		}
	case reflect.String:
		v.SetString(strings.Repeat("s", n))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fillAnswer(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(-1 << (v.Type().Bits() - 1)) // the most negative: its zigzag varint is widest
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(math.MaxUint64 >> (64 - v.Type().Bits()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float64:
		v.SetFloat(math.MaxFloat64)
	}
}

// TestAnswerSizeBoundIsAnUpperBound: for the answer of every API of the
// table, at every version served, filled at every depth (arrays of 3,
// strings and bytes of 300, widest integers), answerSizeBound is at least
// what the answer encodes to, so that a large answer's buffer is allocated
// once at its size (the test logs how far above it is at kmsg's newest
// version, which encodes nearly every field).
func TestAnswerSizeBoundIsAnUpperBound(t *testing.T) {
	r := rules.Kafka()
	apis, _, _ := buildAPIs(&r, KafkaVersions()[len(KafkaVersions())-1]) // the newest serves every API
	for _, a := range apis {
		for v := a.min; v <= a.max; v++ {
			resp := kmsg.ResponseForKey(a.key)
			fillAnswer(reflect.ValueOf(resp).Elem(), 3)
			// Strings and byte arrays long enough to need the widest
			// length prefixes where they are compact.
			var long func(reflect.Value)
			long = func(v reflect.Value) {
				switch v.Kind() {
				case reflect.Pointer:
					long(v.Elem())
				case reflect.Struct:
					for i := range v.NumField() {
						if v.Type().Field(i).IsExported() {
							long(v.Field(i))
						}
					}
				case reflect.String:
					v.SetString(strings.Repeat("s", 300))
				case reflect.Slice:
					if v.Type().Elem().Kind() == reflect.Uint8 {
						v.SetBytes(make([]byte, 300))
						return
					}
					for i := range v.Len() {
						long(v.Index(i))
					}
				}
			}
			long(reflect.ValueOf(resp).Elem())
			resp.SetVersion(v)
			encoded := len(resp.AppendTo(nil))
			bound := answerSizeBound(resp)
			require.GreaterOrEqual(t, bound, encoded, "%s v%d", kmsg.NameForKey(a.key), v)
			if v == a.max {
				// At kmsg's newest version, which encodes every field the
				// bound counts (older ones leave some out).
				resp.SetVersion(resp.MaxVersion())
				newest := len(resp.AppendTo(nil))
				t.Logf("%s v%d: %d B, bounded at %d B (%.1f×)", kmsg.NameForKey(a.key), resp.MaxVersion(), newest, bound, float64(bound)/float64(newest))
			}
		}
	}
}

// TestEveryLargeAnswerTakesTheBudget: every API of the table but the ones
// unbudgetedAnswers names (with a reason) has its answer measured and,
// when it is large, encoded and written under the broker's answer budget:
// with the threshold lowered to one byte, each API's answer in a world
// that holds a topic, a group with 16 KiB of member metadata and committed
// offsets takes the budget. The test logs how much larger than its request
// each answer is.
func TestEveryLargeAnswerTakesTheBudget(t *testing.T) {
	r := rules.Kafka()
	apis, _, _ := buildAPIs(&r, KafkaVersions()[len(KafkaVersions())-1]) // the newest serves every API
	served := map[kmsg.Key]bool{}
	for _, a := range apis {
		served[kmsg.Key(a.key)] = true
	}
	for key := range unbudgetedAnswers {
		require.True(t, served[key], "unbudgetedAnswers names %s, which the table does not serve", kmsg.NameForKey(int16(key)))
	}
	w := newRepeatWorld(t, "kafka")
	w.b.largeAnswerForTest = 1
	nc, err := net.Dial("tcp", w.b.Addr())
	require.NoError(t, err)
	defer func() { nc.Close() }()
	for _, a := range apis {
		if a.key == int16(kmsg.SASLHandshake) || a.key == int16(kmsg.SASLAuthenticate) {
			continue // the broker has no users: it closes the connection (TestEveryClientStringIsBounded reconnects)
		}
		name := kmsg.NameForKey(a.key)
		req := buildRepeatRequest(a.key, a.max, w)
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("answers")).AppendRequest(nil, req, 3)
		w.b.answers.mu.Lock()
		before := w.b.answers.taken
		w.b.answers.mu.Unlock()
		require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
		_, err := nc.Write(frame)
		require.NoError(t, err)
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
			continue
		}
		answer := readFrame(t, nc)
		w.b.answers.mu.Lock()
		took := w.b.answers.taken - before
		w.b.answers.mu.Unlock()
		t.Logf("%s v%d: request %d B, answer %d B (%.1f×)", name, a.max, len(frame), len(answer)+4, float64(len(answer)+4)/float64(len(frame)))
		if why, ok := unbudgetedAnswers[kmsg.Key(a.key)]; ok {
			assert.Zero(t, took, "%s is not budgeted: %s", name, why)
			continue
		}
		assert.Equal(t, 1, took, "%s's answer took the answer budget", name)
	}
}

// TestAnswerBudget: the budget lets answers in while their bytes fit,
// makes the next wait until bytes come back, gives one larger than all of
// it the whole budget, and gives up when the connection closes.
func TestAnswerBudget(t *testing.T) {
	var ab answerBudget
	never := make(chan struct{})
	a := ab.acquire(never, answerBudgetBytes/2)
	b := ab.acquire(never, answerBudgetBytes/2)
	got := make(chan func())
	go func() { got <- ab.acquire(never, 1) }()
	select {
	case <-got:
		t.Fatal("an answer got bytes the budget did not have")
	case <-time.After(10 * time.Millisecond):
	}
	a()
	a() // giving back twice gives back once
	c := <-got
	require.NotNil(t, c)
	b()
	c()
	huge := ab.acquire(never, 4*answerBudgetBytes)
	closed := make(chan struct{})
	close(closed)
	assert.Nil(t, ab.acquire(closed, 1), "a closed connection stops waiting")
	huge()
	ab.mu.Lock()
	assert.Zero(t, ab.used)
	ab.mu.Unlock()
}

// bigSubscriptionGroup makes a KIP-848 group whose one member subscribes
// to names topic names of 150 bytes.
func bigSubscriptionGroup(t *testing.T, b *Broker, group string, names int) {
	nc, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(time.Minute)))
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.SetVersion(0)
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = group, group+"-member", 30_000
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for i := range names {
		hb.SubscribedTopicNames = append(hb.SubscribedTopicNames, fmt.Sprintf("%s-%0140d", group, i))
	}
	resp := roundTrip(t, nc, hb).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, resp.ErrorCode)
}
