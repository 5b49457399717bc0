package coordinator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vastfake/vastfake/rules"
)

// hostileRegex is a regex under MaxSubscribedTopicRegexBytes made of
// counted repetitions of distinct ten-letter words: Go compiles it to about
// two million instructions (80 MiB, seconds of CPU).
func hostileRegex() string {
	var parts []string
	for i := 0; ; i++ {
		p := fmt.Sprintf("(?:%c%cabcdefgh){999}", 'a'+i%26, 'a'+i/26%26)
		if len(strings.Join(append(parts, p), "|")) > MaxSubscribedTopicRegexBytes-4 {
			return strings.Join(parts, "|")
		}
		parts = append(parts, p)
	}
}

// topicAlternation is a regex a user could write: an alternation of topic
// names, nearly MaxSubscribedTopicRegexBytes long.
func topicAlternation() string {
	var names []string
	for i := 0; len(strings.Join(names, "|")) < MaxSubscribedTopicRegexBytes-40; i++ {
		names = append(names, fmt.Sprintf("service-%d.events-v%d", i*7919%10007, i%3))
	}
	return strings.Join(names, "|")
}

func withRegex(rx string) func(*kmsg.ConsumerGroupHeartbeatRequest) {
	return func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr(rx) }
}

// TestRegexBoundedByItsProgram: a regex within the byte bound whose program
// would pass MaxSubscribedTopicRegexInstructions is refused with
// INVALID_REGULAR_EXPRESSION naming the bound, before any program is built,
// and creates no group; a 4 KB alternation of topic names, a regex users
// write, is far below it; a regex that would escape its anchors ("a)|(b")
// is refused as Kafka's RE2/J refuses it.
func TestRegexBoundedByItsProgram(t *testing.T) {
	h := newCGHarness(t)
	hostile := hostileRegex()
	require.LessOrEqual(t, len(hostile), MaxSubscribedTopicRegexBytes)
	resp := h.member("bad", "m").beat(withRegex(hostile))
	assert.Equal(t, kerr.InvalidRegularExpression.Code, resp.ErrorCode)
	require.NotNil(t, resp.ErrorMessage)
	assert.Contains(t, *resp.ErrorMessage, "more than 10000 instructions")
	_, ok := h.c.Group("bad")
	assert.False(t, ok, "a refused regex creates no group")

	_, insts, err := compileTopicRegex(topicAlternation())
	require.NoError(t, err)
	assert.Less(t, insts, MaxSubscribedTopicRegexInstructions/2, "a 4 KB alternation of topic names")
	for _, rx := range []string{`orders\..*|payments-(eu|us)-[0-9]+`, `[a-z0-9._-]{1,249}`, `(?i)ORDERS-.*`} {
		_, _, err := compileTopicRegex(rx)
		assert.NoError(t, err, rx)
	}

	escape := h.member("esc", "m").beat(withRegex("a)|(b"))
	assert.Equal(t, kerr.InvalidRegularExpression.Code, escape.ErrorCode, "a)|(b does not parse on its own")
	h.c.regexes.mu.Lock()
	assert.Empty(t, h.c.regexes.byText, "nothing refused is kept")
	h.c.regexes.mu.Unlock()
}

// TestRegexCompiledOnceAndShared: members of two groups subscribing with
// the same regex share one compiled program; heartbeats that repeat the
// regex compile nothing; the group counts the program's bytes once however
// many members share it; and the program is forgotten when the last member
// leaves.
func TestRegexCompiledOnceAndShared(t *testing.T) {
	h := newCGHarness(t)
	h.addTopic("orders-eu", 1)
	rx := "orders-.*"
	a, b, c := h.member("g1", "a"), h.member("g1", "b"), h.member("g2", "c")
	for _, m := range []*cmem{a, b, c} {
		require.Equal(t, errNone, m.beat(withRegex(rx)).ErrorCode)
	}
	for range 3 {
		require.Equal(t, errNone, a.beat(withRegex(rx)).ErrorCode, "a heartbeat repeating its regex")
	}
	h.c.regexes.mu.Lock()
	compiles, live := h.c.regexes.compiles, len(h.c.regexes.byText)
	r := h.c.regexes.byText[rx]
	h.c.regexes.mu.Unlock()
	assert.Equal(t, 1, compiles, "compiled once")
	assert.Equal(t, 1, live)
	h.c.mu.Lock()
	g1 := h.c.groups["g1"].cg
	assert.Same(t, g1.members["a"].rx, h.c.groups["g2"].cg.members["c"].rx, "shared across groups")
	assert.Equal(t, 2, g1.regexRefs[r])
	strings := 0
	for _, m := range g1.members {
		strings += m.storedBytes(m.instanceID, m.rackID, m.clientID, m.clientHost, m.names, m.regex)
	}
	assert.Equal(t, strings+r.cost(), g1.bytes, "the program counts once in the group's bytes")
	h.c.mu.Unlock()
	assert.Equal(t, map[string][]int32{"orders-eu": {0}}, h.settle("g2", c).Members[0].Current)

	for _, m := range []*cmem{a, b, c} {
		require.Equal(t, errNone, m.beat(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = epochLeave }).ErrorCode)
	}
	h.c.regexes.mu.Lock()
	assert.Empty(t, h.c.regexes.byText, "forgotten with its last member")
	h.c.regexes.mu.Unlock()
}

// TestRegexCompiledOffTheLock: while a heartbeat's regex compiles, the
// coordinator serves everyone else: another group's OffsetCommit, a topic
// being created, another member's heartbeat. A second heartbeat with the
// same regex waits for that compile instead of running its own.
func TestRegexCompiledOffTheLock(t *testing.T) {
	entered, release := make(chan string, 2), make(chan struct{})
	h := newCGHarness(t, func(c *Config) {})
	h.c.regexes.hook = func(text string) {
		entered <- text
		<-release
	}
	h.addTopic("orders-eu", 1)
	first := make(chan int16)
	a, b := h.member("g", "a"), h.member("g", "b")
	for _, m := range []*cmem{a, b} {
		go func() { first <- m.beat(withRegex("orders-.*")).ErrorCode }()
	}
	assert.Equal(t, "orders-.*", <-entered)

	commit := h.c.OffsetCommit(NoCaller, commitReq("other", "", -1, "orders-eu", map[int32]int64{0: 5}))
	assert.Equal(t, []int16{errNone}, commitCodes(commit), "another group commits while the regex compiles")
	h.addTopic("orders-us", 1)
	require.Equal(t, errNone, h.member("g3", "x").join("orders-us").ErrorCode, "another member heartbeats")

	close(release)
	assert.Equal(t, errNone, <-first)
	assert.Equal(t, errNone, <-first)
	select {
	case text := <-entered:
		t.Fatalf("compiled %q twice", text)
	default:
	}
	g := h.settle("g", a, b)
	total := 0
	for _, m := range g.Members {
		total += owned(m)
	}
	assert.Equal(t, 2, total, "both topics assigned")
}

// TestTopicChangeDoesNotWaitForMatching: creating a topic matches no regex
// under the lock: the groups subscribed by regex learn of it when the
// worker has matched it, in a new epoch; a topic a regex matched that is
// deleted leaves at once, with no matching; a regex resolved for one group
// is resolved at once for another group that subscribes to it.
func TestTopicChangeDoesNotWaitForMatching(t *testing.T) {
	h := newCGHarness(t)
	h.addTopic("orders-eu", 1)
	m := h.member("g", "m")
	require.Equal(t, errNone, m.beat(withRegex("orders-.*")).ErrorCode)
	g := h.settle("g", m)
	epoch := g.GroupEpoch

	h.topics.add("orders-us", 1)
	h.c.TopicsChanged("orders-us") // the worker has not run
	assert.Equal(t, epoch, h.group("g").GroupEpoch, "no matching under the topic change")
	h.c.resolveRegexes()
	assert.Equal(t, epoch+1, h.group("g").GroupEpoch, "the worker's match starts a new epoch")
	g = h.settle("g", m)
	assert.Equal(t, map[string][]int32{"orders-eu": {0}, "orders-us": {0}}, g.Members[0].Current)

	h.topics.remove("orders-eu")
	h.c.TopicDeleted("orders-eu")
	assert.Equal(t, epoch+2, h.group("g").GroupEpoch, "a deleted topic leaves at once")
	h.c.mu.Lock()
	assert.False(t, h.c.regexes.byText["orders-.*"].matches("orders-eu"))
	h.c.mu.Unlock()
	h.c.resolveRegexes()
	assert.Equal(t, epoch+2, h.group("g").GroupEpoch, "and the worker has nothing to add")

	// A second group with the same regex: resolved when its first
	// heartbeat has been answered, without the worker.
	o := h.member("g2", "o")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g2", "o", 30_000
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	req.SubscribedTopicRegex = kmsg.StringPtr("orders-.*")
	resp := h.c.ConsumerGroupHeartbeat(NoCaller, req)
	require.Equal(t, errNone, resp.ErrorCode)
	assert.Empty(t, resp.Assignment.Topics, "the heartbeat that brings the regex gets the named topics only")
	assert.Equal(t, int32(2), h.group("g2").GroupEpoch, "its topics come in the next epoch")
	o.epoch = resp.MemberEpoch
	assert.Equal(t, map[string][]int32{"orders-us": {0}}, h.settle("g2", o).Members[0].Current)
}

// TestRegexWorkerRunsOnItsOwn: with the coordinator's own worker (not
// driven by hand), a regex member gets the topics its regex matches, and a
// topic created later, once the worker has matched them; Close stops the
// worker (TestMain fails the package on a goroutine left behind).
func TestRegexWorkerRunsOnItsOwn(t *testing.T) {
	tt := &topicTable{}
	tt.add("orders-eu", 1)
	h := newHarness(t, rules.Kafka(), func(c *Config) { c.Topics, c.Topic = tt.get, tt.lookup })
	ch := &cgHarness{harness: h, topics: tt, caller: NoCaller}
	m := ch.member("g", "m")
	require.Equal(t, errNone, m.beat(withRegex("orders-.*")).ErrorCode)
	assigned := func(want int) func() bool {
		return func() bool {
			g := h.c.groups["g"]
			if g == nil || g.cg == nil || len(g.cg.members) != 1 {
				return false
			}
			return len(g.cg.members["m"].target) == want
		}
	}
	h.waitUntil("the worker resolves the regex", assigned(1))
	tt.add("orders-us", 1)
	h.c.TopicsChanged("orders-us")
	h.waitUntil("the worker matches the new topic", assigned(2))
}

// TestRegexesCloseMidPass: Close returns while the worker is between its
// passes or in one, and a pass after Close does nothing.
func TestRegexesCloseMidPass(t *testing.T) {
	h := newCGHarness(t)
	h.addTopic("orders-eu", 1)
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", "m", 30_000
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	req.SubscribedTopicRegex = kmsg.StringPtr("orders-.*")
	require.Equal(t, errNone, h.c.ConsumerGroupHeartbeat(NoCaller, req).ErrorCode)
	h.c.Close()
	assert.False(t, h.c.resolveRegexesOnce(), "no pass after Close")
}
