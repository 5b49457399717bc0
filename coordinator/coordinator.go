// Package coordinator is vastfake's group coordinator: the classic Kafka
// consumer-group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup),
// the KIP-848 consumer groups of Kafka 4.x (ConsumerGroupHeartbeat,
// ConsumerGroupDescribe; see consumergroup.go), served where the
// ClassicGroupsOnly rule is not enforced, and
// the committed-offset store (OffsetCommit, OffsetFetch, OffsetDelete), with
// the group administration requests (ListGroups, DescribeGroups,
// DeleteGroups), and, for the kafka and audit profiles, Kafka's transaction
// coordinator (InitProducerId with a transactional id, AddPartitionsToTxn,
// AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions,
// ListTransactions; see txn.go), which writes the markers that end a
// transaction through Config.WriteTxnMarkers.
//
// It behaves like the classic group coordinator of Apache Kafka 4.x, with the
// VAST Event Broker 5.5 rules of the "Groups and offsets" table switched on
// and off through rules.Rules: no cooperative assignors, group.instance.id
// ignored, at most MaxGroups groups, offsets that never expire. As in Kafka,
// session timeouts are bounded (Config.MinSessionTimeout and
// MaxSessionTimeout) and a group that is Empty with no committed offsets is
// deleted by the group cleanup.
//
// The coordinator opens no sockets and reads no wall clock: every session
// timeout, rebalance timeout, initial rebalance delay and offset retention is
// measured on the clock.Clock it is given, and so is every transaction
// timeout, so a test that owns a clock.Manual decides when each of them
// passes. Timers run on the clock. Its own goroutines are the short one
// context.AfterFunc runs when a connection closes, to forget the member ids
// handed out on it, and the worker that matches KIP-848 regular expressions
// against topics off the lock (regex.go); Close waits for both. The only
// calls that block are JoinGroup and SyncGroup, in the caller's goroutine.
//
// The broker passes each decoded request and gets the response back with
// the request's version. With the requests whose work depends on the client
// (JoinGroup, OffsetCommit, ConsumerGroupHeartbeat) it passes a
// Caller, its own request: who the client is, so member ids and
// DescribeGroups carry the client id and host, and where a refusal made
// because of a VAST rule, a finding of an audited one and a group created
// are reported, so that they reach the request log with the rule's
// rules.Rules field name ("EagerAssignorsOnly", "MaxGroups"). A refusal is
// also logged with the attribute "rule" set to that name.
package coordinator

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/rules"
)

// errNone is the error code of a success; every other code the
// coordinator answers with is kerr's.
const errNone int16 = 0

// DefaultOffsetMetadataMaxBytes is Kafka's offset.metadata.max.bytes: the
// longest metadata string a committed offset may carry.
const DefaultOffsetMetadataMaxBytes = 4096

// GroupMetadataMaxBytes bounds what the coordinator keeps for one group's
// members: their ids, client ids and hosts, instance ids, protocol type,
// protocols with their metadata, and assignments, with the member ids
// handed out with MEMBER_ID_REQUIRED. Kafka writes a classic
// group's members and assignments as one record of __consumer_offsets,
// which the broker's message.max.bytes (1048588 by default) bounds: a join
// that would make the group larger gets GROUP_MAX_SIZE_REACHED, and a
// leader's assignment that would gets UNKNOWN_SERVER_ERROR, as Kafka
// answers a group record it cannot write, and the group rebalances.
const GroupMetadataMaxBytes = 1048588

// OffsetMetadataTotalMaxBytes bounds the metadata of every committed offset
// the coordinator keeps, all groups together. Kafka keeps offsets on disk
// and has no such bound; vastfake keeps them in memory, so once they hold
// this much a commit whose metadata does not fit gets
// OFFSET_METADATA_TOO_LARGE, as one over offset.metadata.max.bytes does,
// until deleted groups, topics or expired offsets make room. Commits with
// empty or unchanged metadata always fit.
const OffsetMetadataTotalMaxBytes = 64 << 20

// MaxGroupIDBytes bounds the name of a group the coordinator creates. Kafka
// writes a group's id into the keys of its __consumer_offsets records as a
// string with a 16-bit length, so no group it can store has a longer one;
// JoinGroup and OffsetCommit creating one get INVALID_GROUP_ID.
const MaxGroupIDBytes = 32767

// Kafka's defaults for group.min.session.timeout.ms and
// group.max.session.timeout.ms.
const (
	DefaultMinSessionTimeout = 6 * time.Second
	DefaultMaxSessionTimeout = 30 * time.Minute
)

// emptyGroupCleanup is Kafka's offsets.retention.check.interval.ms default.
// Kafka's periodic cleanup, which runs this often, deletes a group that is
// Empty with no committed offsets, so at any time within this long after it
// became Empty; vastfake deletes one once it has been Empty this long, on
// the coordinator's clock (see scheduleExpiry), and at once when MaxGroups
// needs room.
const emptyGroupCleanup = 10 * time.Minute

// Config configures a Coordinator.
type Config struct {
	// Rules are the VAST rules in force; the coordinator reads the group
	// and offset rules from it.
	Rules rules.Rules
	// Clock is the only source of time. It must not be nil.
	Clock clock.Clock
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms:
	// how long the first rebalance of an Empty group waits for more
	// members, waiting one delay more each time a member arrived during the
	// last one, never past the rebalance timeout (Kafka's
	// InitialDelayedJoin). Zero completes the join phase as soon as every
	// known member has joined. Kafka's default is 3 s; the broker's is 0, so
	// tests form groups at once.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are Kafka's
	// group.min.session.timeout.ms and group.max.session.timeout.ms; a
	// JoinGroup outside them gets INVALID_SESSION_TIMEOUT, as in Kafka.
	// Zero removes the bound; a negative session timeout is refused even
	// then, as Kafka's minimum is never negative. The broker passes DefaultMinSessionTimeout and
	// DefaultMaxSessionTimeout, Kafka's defaults, unless configured
	// otherwise.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// OffsetMetadataMaxBytes is Kafka's offset.metadata.max.bytes: a
	// committed offset whose metadata is longer (in bytes) gets
	// OFFSET_METADATA_TOO_LARGE and is not stored, as in Kafka. Zero means
	// DefaultOffsetMetadataMaxBytes; a negative value allows only empty
	// metadata.
	OffsetMetadataMaxBytes int
	// Logger receives refusals made because of a VAST rule, with the
	// attribute "rule" naming the rules.Rules field. It may be nil.
	Logger *slog.Logger
	// Audit receives the findings of audited rules (Rules.Audit) that no
	// one request caused, the coordinator's own (offsets expiring, the
	// protocol a rebalance chose): the client ids of the group's members
	// (comma-separated, or the client that last committed its offsets, or
	// ""), the rule, whether VAST would have refused or behaved otherwise,
	// the group and what happened. The findings a request caused go to its
	// Caller. It is called with the coordinator's lock held and must not
	// call back into the Coordinator. It may be nil.
	Audit func(clients string, rule rules.ID, kind rules.Kind, group, detail string)
	// WriteTxnMarkers writes the markers that end a transaction into its
	// partitions (see txn.go). It is called with the coordinator's lock
	// held and must not call back into the Coordinator. It may be nil.
	WriteTxnMarkers func(TxnMarkers)
	// OffsetsTopic receives, for every offset commit and group change, the
	// record Kafka's group coordinator writes to __consumer_offsets for
	// it, in Kafka's formats (see offsetstopic.go): each group's records
	// of one call at once, as the call ends, in the order the changes
	// happened, so that they are written as one batch, as Kafka writes the
	// records of one request (an OffsetCommit's offsets) in one. It is
	// called with the coordinator's lock held and must not call back into
	// the Coordinator. It may be nil (VAST keeps no such topic).
	OffsetsTopic func(group string, records []OffsetsRecord)
	// AssignmentEpochs checks a KIP-848 member's OffsetCommit and
	// TxnOffsetCommit by per-partition assignment epochs, as Kafka 4.3
	// does (KIP-1251): a commit is refused only when its epoch is newer
	// than the member's, or older than the epoch the member was given the
	// partition at. Off, as before Kafka 4.3, the epoch must be the
	// member's.
	AssignmentEpochs bool
	// TxnOffsetsTopic receives the records of each TxnOffsetCommit, to be
	// written to __consumer_offsets as one transactional batch of the
	// producer's id and epoch, which the transaction's marker (see
	// TxnMarkers.Groups) commits or aborts. It is called with the
	// coordinator's lock held, at once (not as the call ends), and must
	// not call back into the Coordinator; nil writes none.
	TxnOffsetsTopic func(TxnOffsetRecords)
	// Topics returns every topic KIP-848 consumer groups may be assigned,
	// internal ones included, as Kafka matches a regex against them. The coordinator calls it, with its lock
	// held, when it starts and on TopicsChanged and TopicDeleted; it must
	// not call back into the Coordinator. Nil means no topics.
	Topics func() []TopicMeta
	// Topic returns one topic as Topics would list it, and whether it
	// exists. With it, TopicsChanged with names and TopicDeleted read only
	// the topics they name, so that creating or deleting T topics costs
	// T, not T². The same rules as Topics apply; nil means Topics is read
	// whole each time.
	Topic func(name string) (TopicMeta, bool)
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are Kafka's
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms for KIP-848 consumer groups:
	// a member that does not heartbeat within the session timeout is
	// fenced; members are told to heartbeat at the interval. Zero means
	// Kafka's defaults, DefaultConsumerSessionTimeout and
	// DefaultConsumerHeartbeatInterval.
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	// ConsumerGroupMaxSize is Kafka's group.consumer.max.size: a member
	// joining a consumer group that has this many gets
	// GROUP_MAX_SIZE_REACHED. Zero means DefaultConsumerGroupMaxSize.
	ConsumerGroupMaxSize int

	// Locate, when set, says which broker coordinates a group and whether
	// it serves now (several brokers, kafka profile): a group whose
	// coordinator does not serve has its timers paused, and the broker
	// that takes it over gives its members fresh session timeouts
	// (CoordinatorsMoved). It is called with the coordinator's lock held
	// and must not call the coordinator.
	Locate func(group string) (broker int32, serving bool)

	// Share holds Kafka's share group settings (group.share.*); its zero
	// value is Kafka's defaults. Share groups are served where
	// NoShareGroups is not enforced (see sharegroup.go).
	Share ShareConfig

	// regexesByHand (tests) starts no regex worker: the test resolves
	// regexes with resolveRegexes.
	regexesByHand bool
}

// Coordinator holds every group and its committed offsets. All methods are
// safe for concurrent use.
type Coordinator struct {
	rules        rules.Rules
	modes        rules.Modes
	audit        func(clients string, rule rules.ID, kind rules.Kind, group, detail string)
	clock        clock.Clock
	initialDelay time.Duration
	minSession   time.Duration
	maxSession   time.Duration
	maxMetadata  int // offset.metadata.max.bytes
	// metaBytes is the metadata of every committed offset, in bytes,
	// bounded by metaBudget (OffsetMetadataTotalMaxBytes; tests lower it).
	metaBytes  int
	metaBudget int
	log        *slog.Logger

	// watchers counts the goroutines context.AfterFunc may run to forget
	// a pending member id when its connection closes; Close waits for them.
	watchers sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	done    chan struct{} // closed by Close
	changed chan struct{} // made by a waiter (tests), closed and cleared by the next unlock
	groups  map[string]*group
	seq     uint64 // join order of members, for leader choice

	// expiry is the one clock timer that removes expired offsets and
	// abandoned groups, due at expiryAt: the earliest moment any group
	// has something to expire (scheduleExpiry).
	expiry   *timer
	expiryAt time.Time

	rebalances []Rebalance // the last maxRebalances, oldest first

	txns         txns
	writeMarkers func(TxnMarkers)
	offsetsLog   func(group string, records []OffsetsRecord)
	// offsetsPending are the records handed out under the lock, by group
	// in the order groups first had one (offsetsPendingAt: where each
	// group's are); unlock gives them to offsetsLog.
	offsetsPending   []groupRecords
	offsetsPendingAt map[string]int
	// txnOffsetsLog is Config.TxnOffsetsTopic; offsetSeq numbers committed
	// and pending offsets in the order of their records (nextOffsetSeq).
	txnOffsetsLog    func(TxnOffsetRecords)
	assignmentEpochs bool // Config.AssignmentEpochs
	offsetSeq        uint64

	// KIP-848 consumer groups (consumergroup.go).
	topicsFn       func() []TopicMeta
	topicFn        func(name string) (TopicMeta, bool)
	topics         map[string]TopicMeta // by name, as of the last refreshTopics
	topicIDs       map[[16]byte]string
	cgSession      time.Duration
	cgInterval     time.Duration
	cgMaxSize      int
	consumerGroups int // how many of groups are consumer groups

	// Regular expressions of KIP-848 subscriptions (regex.go).
	regexes       regexRegistry
	regexesByHand bool
	regexKick     chan struct{}       // wakes the worker
	regexWorker   sync.WaitGroup      // the worker, which Close waits for
	regexPass     sync.Mutex          // held through each of the worker's passes
	regexPending  map[string]struct{} // topics created since the worker's last pass

	locate func(group string) (broker int32, serving bool) // Config.Locate
	// Share groups (sharegroup.go, sharepartition.go, sharefetch.go,
	// shareadmin.go).
	share         ShareConfig
	shareGroups   int // how many of groups are share groups
	shareSessions map[shareSessionKey]*shareSession
	// shareSessionsByNode counts the sessions each broker id holds,
	// shareSessionParts their partitions together.
	shareSessionsByNode map[int32]int
	shareSessionParts   int
	shareConns          map[<-chan struct{}]*shareConn
	// shareAvail is closed when records of a share group are released
	// (shareRecordsAvailable), to wake waiting ShareFetch requests.
	shareAvail chan struct{}
	// groupConfigs are the configs set on GROUP resources, by group.
	groupConfigs map[string]map[string]string
}

// maxRebalances bounds the rebalance history; the oldest go first.
const maxRebalances = 1000

// Rebalance is one finished rebalance of a group: the generation it made,
// with who got what.
type Rebalance struct {
	// Time is when the rebalance finished, on the coordinator's clock.
	Time  time.Time
	Group string
	// Generation is a classic group's generation, or a KIP-848 consumer
	// group's assignment epoch: its rebalance finished once every member
	// had its target (Protocol is then the server-side assignor, and each
	// member's Assignment its partitions encoded as a classic consumer's).
	Generation int32
	// State is "Stable" when the leader's SyncGroup handed out the
	// assignments, or "Empty" when no member was left to join.
	State    string
	Protocol string
	// Members are the generation's members with their assignments, in
	// join order; none for an Empty group.
	Members []MemberInfo
}

// recordRebalance adds g's current generation to the history. Call it with
// c.mu held.
func (c *Coordinator) recordRebalance(g *group) {
	c.appendRebalance(Rebalance{
		Time: c.clock.Now(), Group: g.name, Generation: g.generation,
		State: g.state.String(), Protocol: g.protocol, Members: g.memberInfos(),
	})
	c.logGroup(g)
}

// appendRebalance adds r to the bounded history. Call it with c.mu held.
func (c *Coordinator) appendRebalance(r Rebalance) {
	if len(c.rebalances) == maxRebalances {
		// Rebalances returns a copy, so the history can shift in place.
		copy(c.rebalances, c.rebalances[1:])
		c.rebalances = c.rebalances[:maxRebalances-1]
	}
	c.rebalances = append(c.rebalances, r)
}

// Rebalances returns a copy of the last 1,000 finished rebalances of every
// group, oldest first.
func (c *Coordinator) Rebalances() []Rebalance {
	c.mu.Lock()
	defer c.unlock()
	out := make([]Rebalance, len(c.rebalances))
	copy(out, c.rebalances) // Members are never mutated once recorded
	return out
}

func offsetMetadataMax(n int) int {
	switch {
	case n == 0:
		return DefaultOffsetMetadataMaxBytes
	case n < 0:
		return 0
	}
	return n
}

// New returns a coordinator with no groups.
func New(cfg Config) *Coordinator {
	if cfg.Clock == nil {
		panic("coordinator: Config.Clock is nil")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Coordinator{
		rules:        cfg.Rules,
		modes:        cfg.Rules.Modes(),
		audit:        cfg.Audit,
		clock:        cfg.Clock,
		initialDelay: cfg.InitialRebalanceDelay,
		minSession:   cfg.MinSessionTimeout,
		maxSession:   cfg.MaxSessionTimeout,
		maxMetadata:  offsetMetadataMax(cfg.OffsetMetadataMaxBytes),
		metaBudget:   OffsetMetadataTotalMaxBytes,
		log:          log,
		done:         make(chan struct{}),
		groups:       make(map[string]*group),
		txns: txns{byID: make(map[string]*transaction),
			pending: make(map[string]map[*pendingOffsets]struct{})},
		writeMarkers:     cfg.WriteTxnMarkers,
		offsetsLog:       cfg.OffsetsTopic,
		txnOffsetsLog:    cfg.TxnOffsetsTopic,
		assignmentEpochs: cfg.AssignmentEpochs,
		topicsFn:         cfg.Topics,
		topicFn:          cfg.Topic,
		cgSession:        cmp.Or(cfg.ConsumerSessionTimeout, DefaultConsumerSessionTimeout),
		cgInterval:       cmp.Or(cfg.ConsumerHeartbeatInterval, DefaultConsumerHeartbeatInterval),
		cgMaxSize:        cmp.Or(cfg.ConsumerGroupMaxSize, DefaultConsumerGroupMaxSize),
		locate:           cfg.Locate,
		share:            cfg.Share.withDefaults(),

		regexesByHand: cfg.regexesByHand,
	}
	c.startRegexWorker()
	c.refreshTopics()
	return c
}

// Close shuts the coordinator down: every JoinGroup and SyncGroup blocked in
// it returns at once with COORDINATOR_NOT_AVAILABLE, every timer is stopped,
// and later requests get COORDINATOR_NOT_AVAILABLE. It returns once no
// goroutine of the coordinator's is left. Groups and offsets stay readable
// through Groups, Group and CommittedOffset. Close is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.expiry.cancel()
	c.expiry = nil
	for _, g := range c.groups {
		g.stopTimers(c)
	}
	for _, t := range c.txns.byID {
		t.timer.cancel()
		t.timer = nil
	}
	for done, sc := range c.shareConns {
		if sc.unwatch != nil && sc.unwatch() {
			c.watchers.Done() // the watch will never run
		}
		delete(c.shareConns, done)
	}
	close(c.done)
	c.unlock()
	c.watchers.Wait()
	c.regexWorker.Wait()
}

// unlock releases c.mu and wakes anything waiting for a change of state.
func (c *Coordinator) unlock() {
	c.flushOffsetsRecords()
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
	c.mu.Unlock()
}

// refuse reports a request refused because of a VAST rule to its caller,
// which then owns the report, and to the coordinator's logger, at Debug, or
// at Info for NoCaller. It runs with c.mu held, so the caller it is given
// must be the one deferRefusals returned, which reports only once c.mu is
// released.
func (c *Coordinator) refuse(caller Caller, api string, rule rules.ID, group, reason string) {
	level := slog.LevelDebug
	if caller == NoCaller {
		level = slog.LevelInfo
	}
	caller.Refused(rule, reason)
	c.log.Log(context.Background(), level, "coordinator: refused by VAST rule",
		"api", api, "rule", rule.String(), "group", group, "reason", reason)
}

// vast applies rule id to a request that does what the rule is about, as
// the broker's checks do, through the one decision of rules.Modes.Check:
// enforced, it reports a refusal (kind Refused) to caller with reason and
// returns true, and the request is answered as VAST does; audited, it
// reports a finding to caller and returns false, and the request goes on
// as in Kafka; off, it returns false. Call it with c.mu held, with a
// caller from deferRefusals.
func (c *Coordinator) vast(caller Caller, id rules.ID, kind rules.Kind, api, group, reason string) bool {
	return c.modes.Check(id, kind,
		func() { c.refuse(caller, api, id, group, reason) },
		func() { caller.Finding(id, kind, group, reason) })
}

// enforced reports whether rule id is enforced.
func (c *Coordinator) enforced(id rules.ID) bool { return c.modes.Of(id) == rules.Enforce }

// maxGroupsReason explains a MaxGroups refusal.
func (c *Coordinator) maxGroupsReason() string {
	return fmt.Sprintf("the view already has %d consumer groups, VAST's limit", c.rules.MaxGroups)
}

// newMemberID makes a member id as Kafka does: the client id, a dash and a
// random UUID.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ---- timers ----

// timer is a clock timer whose function runs under c.mu and never after it
// was cancelled, even if the clock had already begun to fire it.
type timer struct {
	stop func() bool
	dead bool
}

// after runs f under c.mu once d has passed on the coordinator's clock,
// unless the timer is cancelled or the coordinator closed first. Call it with
// c.mu held.
func (c *Coordinator) after(d time.Duration, f func()) *timer {
	t := &timer{}
	t.stop = c.clock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.unlock()
		if t.dead || c.closed {
			return
		}
		t.dead = true
		f()
	})
	return t
}

// cancel stops t; it is a no-op on nil. Call it with c.mu held.
func (t *timer) cancel() {
	if t == nil {
		return
	}
	t.dead = true
	t.stop()
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// canCreateGroup reports whether group, which api would create, fits under
// Rules.MaxGroups, and applies the rule when it does not (see vast). At
// the limit it first deletes every group Kafka's periodic cleanup would
// delete (abandoned), since that cleanup may run at any moment: a group that
// holds no member and no offset does not keep a new one out. Call it with
// c.mu held.
func (c *Coordinator) canCreateGroup(caller Caller, api, group string) bool {
	if c.rules.MaxGroups <= 0 || c.classicGroups() < c.rules.MaxGroups {
		return true
	}
	for _, g := range c.groups {
		if g.abandoned() && g.cg == nil {
			c.removeGroup(g)
		}
	}
	return c.classicGroups() < c.rules.MaxGroups || !c.vast(caller, rules.MaxGroups, rules.Refused, api, group, c.maxGroupsReason())
}

// classicGroups counts the classic groups, which Rules.MaxGroups caps: VAST
// has no other kind, and KIP-848 consumer groups and share groups (served
// only where ClassicGroupsOnly and NoShareGroups are not enforced) do not count.
func (c *Coordinator) classicGroups() int { return len(c.groups) - c.consumerGroups - c.shareGroups }

// removeGroup deletes g: its timers stop, a call blocked in it gets
// COORDINATOR_NOT_AVAILABLE, and it is Dead; once no group is left, the
// expiry timer (scheduleExpiry) stops too. Call it with c.mu held.
func (c *Coordinator) removeGroup(g *group) {
	g.state = stateDead
	g.stopTimers(c)
	if g.cg != nil {
		c.consumerGroups--
		for _, m := range g.cg.members {
			c.setMemberRegex(g.cg, m, nil)
		}
	}
	if g.sg != nil {
		c.shareGroups--
		for key, sess := range c.shareSessions {
			if key.group == g.name {
				c.endShareSession(sess, false)
			}
		}
	}
	for t, ps := range g.offsets {
		c.metaBytes -= metadataBytes(ps)
		for p := range ps {
			c.logOffsetGone(g.name, t, p)
		}
	}
	delete(c.groups, g.name)
	c.logGroupGone(g.name)
	if len(c.groups) == 0 {
		c.expiry.cancel()
		c.expiry = nil
	}
}

func (c *Coordinator) newGroup(name string) *group {
	g := &group{
		name:       name,
		members:    make(map[string]*member),
		pending:    make(map[string]*pendingMember),
		static:     make(map[string]string),
		offsets:    make(map[string]map[int32]offset),
		emptySince: c.clock.Now(),
	}
	c.groups[name] = g
	c.relocate(g)
	c.expiryChanged(g)
	return g
}

// instanceID returns the group.instance.id a request carries, or nil when
// the request's version has none or Rules.IgnoreGroupInstanceID is on (VAST
// accepts the id and ignores it: the member is dynamic).
func (c *Coordinator) instanceID(id *string, versionHasIt bool) *string {
	if !versionHasIt || id == nil || c.enforced(rules.IgnoreGroupInstanceID) {
		return nil
	}
	s := *id
	return &s
}

// ---- inspection ----

// GroupInfo is a deep copy of one group's state, for tests and fixtures.
type GroupInfo struct {
	Name string
	// Type is "classic", "consumer" (a KIP-848 consumer group) or
	// "share" (a KIP-932 share group).
	Type string
	// State is Kafka's name for the group state: "Empty",
	// "PreparingRebalance", "CompletingRebalance", "Stable" or "Dead" for
	// a classic group; "Empty", "Assigning", "Reconciling" or "Stable"
	// for a consumer group, Stable once every member has its target
	// assignment.
	State        string
	ProtocolType string
	// Protocol is a classic group's chosen protocol or, for a consumer
	// group, its server-side assignor ("uniform" or "range").
	Protocol string
	// Generation is a classic group's generation; for a consumer group,
	// its group epoch.
	Generation int32
	Leader     string
	// GroupEpoch and AssignmentEpoch are a consumer group's group epoch
	// and the epoch of its target assignment; zero for a classic group.
	GroupEpoch      int32
	AssignmentEpoch int32
	// Members are in the order they joined (a consumer group's by member
	// id).
	Members []MemberInfo
	// Offsets are the committed offsets by topic and partition.
	Offsets map[string]map[int32]OffsetInfo
	// SharePartitions are a share group's partitions with share state,
	// by topic and partition.
	SharePartitions []SharePartitionInfo `json:",omitempty"`
}

// MemberInfo is one member of a group.
type MemberInfo struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Assignment is what the leader assigned in the last SyncGroup.
	Assignment []byte
	// Metadata is the member's metadata for the group's protocol (its first
	// protocol while none is chosen).
	Metadata []byte

	// The rest describe a member of a consumer group (KIP-848).

	// MemberEpoch is the member's epoch (-2 while a static member is
	// away).
	MemberEpoch int32 `json:",omitempty"`
	// MemberState is where its reconciliation stands, as Kafka names it:
	// STABLE, UNREVOKED_PARTITIONS or UNRELEASED_PARTITIONS.
	MemberState string `json:",omitempty"`
	// Subscribed are the topic names it subscribes to; Regex its
	// SubscribedTopicRegex.
	Subscribed []string `json:",omitempty"`
	Regex      string   `json:",omitempty"`
	// Current is the assignment it may consume, Target its part of the
	// target assignment, Revoking the partitions it must still revoke
	// before others get them; by topic name.
	Current  map[string][]int32 `json:",omitempty"`
	Target   map[string][]int32 `json:",omitempty"`
	Revoking map[string][]int32 `json:",omitempty"`
	// Heartbeat is when its last heartbeat arrived, on the broker's
	// clock.
	Heartbeat time.Time `json:",omitzero"`
}

// Reconciled reports whether the group is Stable with members and every
// member has its target assignment: for a classic group, Stable; for a
// consumer group, Stable (every member at the assignment epoch, nothing
// waiting to be revoked or released).
func (g GroupInfo) Reconciled() bool {
	return g.State == "Stable" && len(g.Members) > 0
}

// OffsetInfo is one committed offset.
type OffsetInfo struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// Groups returns every group, sorted by name.
func (c *Coordinator) Groups() []GroupInfo {
	c.mu.Lock()
	defer c.unlock()
	out := make([]GroupInfo, 0, len(c.groups))
	for _, name := range c.sortedGroupNames() {
		out = append(out, c.info(c.groups[name]))
	}
	return out
}

// Group returns one group, and false if it does not exist.
func (c *Coordinator) Group(name string) (GroupInfo, bool) {
	c.mu.Lock()
	defer c.unlock()
	g := c.lookup(name)
	if g == nil {
		return GroupInfo{}, false
	}
	return c.info(g), true
}

// CommittedOffset returns the offset group committed for a partition, and
// false if it committed none.
func (c *Coordinator) CommittedOffset(group, topic string, partition int32) (int64, bool) {
	c.mu.Lock()
	defer c.unlock()
	g := c.lookup(group)
	if g == nil {
		return -1, false
	}
	o, ok := g.offsets[topic][partition]
	if !ok {
		return -1, false
	}
	return o.off, true
}

// lookup returns the group named name, or nil. It changes nothing: offsets
// expire and abandoned groups go on the clock (scheduleExpiry), not when a
// request looks.
func (c *Coordinator) lookup(name string) *group {
	return c.groups[name]
}

func (c *Coordinator) sortedGroupNames() []string {
	names := make([]string, 0, len(c.groups))
	for n := range c.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Coordinator) info(g *group) GroupInfo {
	gi := GroupInfo{
		Name:         g.name,
		Type:         "classic",
		State:        g.state.String(),
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Generation:   g.generation,
		Leader:       g.leader,
		Members:      g.memberInfos(),
		Offsets:      make(map[string]map[int32]OffsetInfo, len(g.offsets)),
	}
	for t, ps := range g.offsets {
		cp := make(map[int32]OffsetInfo, len(ps))
		for p, o := range ps {
			cp[p] = OffsetInfo{Offset: o.off, LeaderEpoch: o.epoch, Metadata: o.meta}
		}
		gi.Offsets[t] = cp
	}
	if g.cg != nil {
		gi.Members = nil
		c.consumerInfo(g, &gi)
	}
	if g.sg != nil {
		c.shareInfo(g, &gi)
	}
	return gi
}

// memberInfos describes g's members in join order.
func (g *group) memberInfos() []MemberInfo {
	var out []MemberInfo
	for _, m := range g.ordered() {
		mi := MemberInfo{
			MemberID:   m.id,
			ClientID:   m.clientID,
			ClientHost: m.clientHost,
			Assignment: bytes.Clone(m.assignment),
			Metadata:   bytes.Clone(m.metadataFor(g.protocol)),
		}
		if m.instanceID != nil {
			mi.InstanceID = *m.instanceID
		}
		out = append(out, mi)
	}
	return out
}
