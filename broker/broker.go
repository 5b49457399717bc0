// Package broker is vastfake's Kafka broker: a TCP server that speaks the
// Kafka wire protocol, keeps its partitions in memory (package log), runs
// consumer groups (package coordinator) and enforces the VAST rules it is
// given (package rules).
//
// A request's path is short: read a frame, look its API up in the one table
// in apis.go, decode it with kmsg, run the handler, encode with kmsg, write.
// Handlers are grouped by concept: produce.go, fetch.go, offsets.go,
// topics.go, groups.go, configs.go. Each VAST rule is checked once, through
// Broker.vast (audit.go), which enforces, audits or ignores it by its mode.
package broker

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vastfake/vastfake/clock"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/log"
	"github.com/vastfake/vastfake/rules"
)

// Broker is one in-memory Kafka broker. Create it with New; it serves until
// Close.
type Broker struct {
	cfg   config
	rules rules.Rules
	modes rules.Modes // each rule's mode, from rules: see Broker.vast
	clock clock.Clock
	log   *slog.Logger

	// nodes are the broker ids and their listeners (nodes.go); the first
	// is the bootstrap address.
	nodes       []*node
	moves       moves       // MoveLeader and MoveCoordinator
	repl        replication // replicas and elections (replicas.go), guarded by moves.mu
	clusterID   string
	coord       *coordinator.Coordinator
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	closeOnce   sync.Once
	connsMu     sync.Mutex
	conns       map[*clientConn]struct{}
	stopSweep   func()
	stopExpire  func()
	stopCompact func()
	sweepMu     sync.Mutex
	data        *store
	apis        []api     // the table, with the rules applied
	features    []feature // what ApiVersions v3+ lists (KafkaVersion.features)
	apiByKey    [maxAPIKey + 1]*api
	// hiddenBy names the rule that hides each API key, or "".
	hiddenBy [maxAPIKey + 1]string
	// auditedBy names the audited rule that would hide each API key, or
	// caps its versions, or is 0.
	auditedBy  [maxAPIKey + 1]rules.ID
	dataNotify chan struct{} // closed and replaced on an append while a fetch waits; wakes waiting fetches
	notifyMu   sync.Mutex
	// fetchWaiters counts fetches waiting for data (delayed or paced), so
	// that a produce with no fetch waiting skips the wake-up.
	fetchWaiters atomic.Int32

	// appendMu makes a produce request visible all at once: Produce holds
	// it exclusively while it appends every partition of the request;
	// Fetch and ListOffsets hold it shared while they read.
	appendMu       sync.RWMutex
	nextProducerID atomic.Int64
	// producers is every idempotent producer's state per partition,
	// guarded by appendMu.
	producers *log.Producers
	staleEnd  atomic.Int64 // StaleEndOffset in nanoseconds
	// held are the acks=all produces waiting for a down in-sync replica
	// (insync.go).
	held heldProduces

	faults faultState
	reqLog requestLog
	audit  auditLog
	// offsetsState is what the broker keeps about __consumer_offsets.
	offsetsState offsetsTopicState
	// forecast counts the groups each client created.
	forecast groupForecast
	// refusalLines limits the server log's refusal lines.
	refusalLines refusalLimiter
	// reclaimMu lets one connection at a time collect after a large
	// request (reclaimLarge).
	reclaimMu sync.Mutex
	// readers are free large read buffers (takeReader), closedConns the
	// connections closed since the last collection (connClosed).
	readersMu sync.Mutex
	readers   []*bufio.Reader
	// smallReaders are free readBufferBeforeAuth ones (idleconn.go).
	smallReaders []*bufio.Reader
	closedConns  int
	// largeTurn holds the one turn to decode and handle a large request
	// (startLarge).
	largeTurn chan struct{}
	// answers is the budget of large answers (answers.go);
	// largeAnswerForTest, when set, replaces largeAnswerBytes.
	answers            answerBudget
	largeAnswerForTest int
	// clientSoftware names the software of connections that do not
	// show it, from their client id's other connections.
	clientSoftware clientSoftwareMemory
	authz          authorizer
	// creds holds what SASL logins are checked against (scram.go).
	creds *credentials

	// decompress holds a token for each compressed batch being validated
	// or compacted; its capacity is WithDecompressions. decompressWaiting
	// counts the requests and compactions waiting for a token.
	decompress        chan struct{}
	decompressWaiting atomic.Int32

	// buffers is the free list of request frame and answer buffers
	// shared by the broker's connections.
	buffers bufferPool
}

type config struct {
	listen       string
	advertise    string
	advertiseAll []string
	brokers      int
	nodeID       int32
	clusterID    string
	rules        rules.Rules
	rulesSet     bool
	kafka        KafkaVersion // WithKafkaVersion
	clock        clock.Clock
	logger       *slog.Logger
	topics       []TopicSpec
	rebalDelay   time.Duration
	// KIP-848: group.consumer.session.timeout.ms,
	// group.consumer.heartbeat.interval.ms, group.consumer.max.size
	cgSession, cgInterval time.Duration
	cgMaxSize             int
	partitions            int32 // num.partitions
	minSession            time.Duration
	maxSession            time.Duration
	maxOffsetMD           int // offset.metadata.max.bytes
	retentionEv           time.Duration
	compactionEv          time.Duration
	producerExp           time.Duration      // producer.id.expiration.ms
	gaps                  map[string]log.Gap // offset gaps by topic name
	users                 map[string]string
	policies              []Policy
	defaultDeny           bool
	view                  string
	tls                   *tls.Config
	err                   error

	idleTimeout         time.Duration
	readTimeout         time.Duration
	emptyFetchDelay     time.Duration
	fetchDetail         bool
	tlsHandshakeTimeout time.Duration
	decompressions      int

	electionDelay     time.Duration // WithElectionDelay
	electionDelaySet  bool
	replicationFactor int16 // default.replication.factor; 0: 3, capped at the broker count
	// wrapListener, when set, wraps every listener the broker opens;
	// tests use it to make Accept fail.
	wrapListener func(net.Listener) net.Listener
}

// MinInterval is the shortest interval of periodic work New takes
// (WithRetentionCheckInterval, WithCompactionInterval) other than 0: Kafka's
// minimum, 1 ms.
const MinInterval = time.Millisecond

// MaxStartName bounds the cluster id and the view name, which every
// Metadata answer or resource name carries.
const MaxStartName = 255

// Option configures a Broker.
type Option func(*config)

// WithListen sets the address to listen on, "127.0.0.1:0" by default (a
// random free port; Addr tells which).
func WithListen(addr string) Option { return func(c *config) { c.listen = addr } }

// WithAdvertise sets the host:port that Metadata tells clients to connect
// to. By default it is the listener's real address.
func WithAdvertise(addr string) Option { return func(c *config) { c.advertise = addr } }

// WithRules sets the rules to enforce. The default is rules.VAST().
func WithRules(r rules.Rules) Option {
	return func(c *config) { c.rules, c.rulesSet = r, true }
}

// WithProfile sets the rules by profile name, "vast", "kafka" or "audit"
// (Kafka's behaviour, every VAST rule audited: see Findings); New fails for
// any other name.
func WithProfile(name string) Option {
	return func(c *config) {
		r, ok := rules.ForProfile(name)
		if !ok {
			c.err = fmt.Errorf("vastfake: unknown profile %q (want vast, kafka or audit)", name)
			return
		}
		c.rules, c.rulesSet = r, true
	}
}

// WithKafkaVersion sets the Kafka release whose semantics the broker
// follows where Kafka 4.x releases differ: DefaultKafkaVersion (4.3)
// unless set. See KafkaVersion for what each changes; ApiVersions and the
// features it advertises follow it. The VAST profile's rules hide what
// changes, so there it changes only the metadata.version it advertises.
// New refuses a version not in KafkaVersions.
func WithKafkaVersion(v KafkaVersion) Option { return func(c *config) { c.kafka = v } }

// WithClock sets the broker's clock. The default is the wall clock; a
// *clock.Manual lets a test move time.
func WithClock(c clock.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithLogger sets the logger; by default the broker logs nothing.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithNodeID sets the broker's node id, 0 by default.
func WithNodeID(id int32) Option { return func(c *config) { c.nodeID = id } }

// WithClusterID sets the cluster id reported in Metadata.
func WithClusterID(id string) Option { return func(c *config) { c.clusterID = id } }

// WithTopics creates topics before the broker accepts connections.
func WithTopics(topics ...TopicSpec) Option {
	return func(c *config) { c.topics = append(c.topics, topics...) }
}

// WithInitialRebalanceDelay sets Kafka's group.initial.rebalance.delay.ms:
// how long the first rebalance of an empty group waits for more members,
// waiting one delay more each time a member arrived, never past the
// rebalance timeout. It is 0 by default so tests form groups at once;
// Kafka's default is 3s, and VAST waits "a few seconds" (VAST's Consume events page).
func WithInitialRebalanceDelay(d time.Duration) Option {
	return func(c *config) { c.rebalDelay = d }
}

// WithDefaultPartitions sets Kafka's num.partitions: the partition count of
// a topic auto-created by Metadata (kafka profile) and of CreateTopics
// asking for -1. It is 1 by default, as in Kafka; New fails for a count
// below 1.
func WithDefaultPartitions(n int32) Option { return func(c *config) { c.partitions = n } }

// WithConsumerGroupTimeouts sets, for KIP-848 consumer groups, Kafka's
// group.consumer.session.timeout.ms (a member that does not heartbeat
// within it is fenced and its partitions move) and
// group.consumer.heartbeat.interval.ms (how often members are told to
// heartbeat). The defaults are Kafka's, 45s and 5s
// (coordinator.DefaultConsumerSessionTimeout,
// DefaultConsumerHeartbeatInterval); a test that wants rebalances to
// settle quickly lowers the interval. As in Kafka, both must be positive
// and the interval shorter than the session timeout, or New fails.
func WithConsumerGroupTimeouts(session, heartbeat time.Duration) Option {
	return func(c *config) { c.cgSession, c.cgInterval = session, heartbeat }
}

// WithConsumerGroupMaxSize sets Kafka's group.consumer.max.size: a member
// joining a KIP-848 consumer group that has n members gets
// GROUP_MAX_SIZE_REACHED. The default is 10,000
// (coordinator.DefaultConsumerGroupMaxSize), a guard of vastfake's where
// Kafka has none; New fails for n below 1.
func WithConsumerGroupMaxSize(n int) Option {
	return func(c *config) { c.cgMaxSize = n }
}

// WithMinSessionTimeout sets Kafka's group.min.session.timeout.ms: a
// JoinGroup with a shorter session timeout gets INVALID_SESSION_TIMEOUT.
// The default is Kafka's, 6s (coordinator.DefaultMinSessionTimeout), in
// both profiles; 0 removes the bound.
func WithMinSessionTimeout(d time.Duration) Option {
	return func(c *config) { c.minSession = d }
}

// WithMaxSessionTimeout sets Kafka's group.max.session.timeout.ms: a
// JoinGroup with a longer session timeout gets INVALID_SESSION_TIMEOUT.
// The default is Kafka's, 30m (coordinator.DefaultMaxSessionTimeout), in
// both profiles; 0 removes the bound.
func WithMaxSessionTimeout(d time.Duration) Option {
	return func(c *config) { c.maxSession = d }
}

// WithOffsetMetadataMaxBytes sets Kafka's offset.metadata.max.bytes: an
// OffsetCommit partition whose metadata is longer than n bytes gets
// OFFSET_METADATA_TOO_LARGE and is not stored; the request's other
// partitions are. The default is Kafka's, 4096
// (coordinator.DefaultOffsetMetadataMaxBytes), in both profiles; 0 allows
// only empty metadata, and New fails for a negative n.
func WithOffsetMetadataMaxBytes(n int) Option {
	return func(c *config) { c.maxOffsetMD = n }
}

// DefaultRetentionCheckInterval is how often retention runs unless
// WithRetentionCheckInterval says otherwise.
const DefaultRetentionCheckInterval = time.Second

// WithRetentionCheckInterval sets how often, on the broker's clock, retention
// runs over every partition (Kafka's log.retention.check.interval.ms). The
// default is DefaultRetentionCheckInterval, 1s; 0 turns periodic retention
// off (ApplyRetention still applies it). A test on a manual clock gets
// retention when it advances the clock past the interval.
func WithRetentionCheckInterval(d time.Duration) Option {
	return func(c *config) { c.retentionEv = d }
}

// WithProducerIDExpiration sets Kafka's producer.id.expiration.ms: a
// partition forgets an idempotent producer that has not appended to it for
// d on the broker's clock, checked every second of it.
// A producer it forgot may continue at any sequence number, so a retry after
// that long is not recognized. The default is DefaultProducerIDExpiration,
// Kafka's 1 day; 0 never expires producers (MaxProducerStates still bounds
// them).
func WithProducerIDExpiration(d time.Duration) Option { return func(c *config) { c.producerExp = d } }

// Bounds of the idempotent producers' state (kafka profile).
const (
	// DefaultProducerIDExpiration is Kafka's producer.id.expiration.ms
	// default.
	DefaultProducerIDExpiration = 24 * time.Hour
	// MaxProducerStates caps the producer states a broker holds, one per
	// producer id and partition it appended to, each about 260 bytes: a
	// client that creates producers without end cannot make the broker
	// hold more than about 26 MB of them. Past the cap, the state of the
	// producer that appended least recently, in any partition, is
	// forgotten (Kafka has no such cap; its only bound is
	// producer.id.expiration.ms).
	MaxProducerStates = 100_000
)

// WithUsers adds SASL users, name to password. With at least one user
// the listener requires authentication, as a VAST view with SASL_PLAINTEXT
// does (VAST's Consume events page): a client may send only ApiVersions, SaslHandshake and
// SaslAuthenticate until it has authenticated, anything else closes its
// connection, and wrong credentials get SASL_AUTHENTICATION_FAILED and a
// closed connection. Each user logs in with PLAIN, and where rule
// PlainSASLOnly is not enforced (kafka and audit profiles) with
// SCRAM-SHA-256 and SCRAM-SHA-512 too: New derives a credential for each
// (a random salt, 4096 iterations) and keeps no password.
func WithUsers(users map[string]string) Option {
	return func(c *config) {
		if c.users == nil {
			c.users = make(map[string]string, len(users))
		}
		for name, pass := range users {
			c.users[name] = pass
		}
	}
}

// WithPolicies adds identity-policy statements that authorize every request
// (see Policy). Deny beats allow; a request no statement matches is allowed,
// VAST's default, per its Kafka protocol support pages, unless WithDefaultDeny is set. New fails for a
// statement with an unknown effect or action or a resource that is not a
// VAST Kafka resource name.
func WithPolicies(policies ...Policy) Option {
	return func(c *config) { c.policies = append(c.policies, policies...) }
}

// WithDefaultDeny makes a request that no policy statement matches denied
// rather than allowed, so that a test can list exactly the permissions an
// app has in production.
func WithDefaultDeny(deny bool) Option { return func(c *config) { c.defaultDeny = deny } }

// WithView sets the view name used in resource names
// (vast:kafka:topic:<view>:<topic>); it is DefaultView, "vastfake", unless
// set.
func WithView(name string) Option { return func(c *config) { c.view = name } }

// WithTLS makes the listener accept TLS connections only, with cfg (which
// needs a certificate). Clients then connect with SSL, or SASL_SSL when
// users are configured. fixtures.SelfSignedTLS makes a configuration for
// tests.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// The connection timeouts' defaults.
const (
	// DefaultIdleTimeout is Kafka's connections.max.idle.ms default.
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultReadTimeout is how long a request may stall mid-frame.
	DefaultReadTimeout = 30 * time.Second
	// DefaultTLSHandshakeTimeout is net/http's TLS handshake timeout.
	DefaultTLSHandshakeTimeout = 10 * time.Second
)

// WithIdleTimeout closes a connection that sends no request for d, as
// Kafka's connections.max.idle.ms does; clients reconnect when they next
// need the broker. A request the broker is still answering (a delayed
// fetch, a JoinGroup waiting for a rebalance) does not count as idle. An
// answer the client reads nothing of for d also closes the connection; a
// slow reader that keeps reading keeps it.
// The default is DefaultIdleTimeout, 10 minutes; 0 never closes an idle
// connection. The timeout is wall-clock time, whatever clock the broker
// runs on.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idleTimeout = d } }

// WithReadTimeout closes a connection that starts sending a request and
// then sends nothing more for d before the request is complete: a stalled
// frame would otherwise hold its buffer until the idle timeout. The default
// is DefaultReadTimeout, 30 seconds; 0 waits as long as the idle timeout.
// Kafka has no such timeout (its idle timeout covers it).
func WithReadTimeout(d time.Duration) Option { return func(c *config) { c.readTimeout = d } }

// WithTLSHandshakeTimeout closes a TLS connection whose handshake has not
// finished within d of its accept. The default is
// DefaultTLSHandshakeTimeout, 10 seconds; 0 waits as long as it takes. It
// matters only with WithTLS.
func WithTLSHandshakeTimeout(d time.Duration) Option {
	return func(c *config) { c.tlsHandshakeTimeout = d }
}

// WithDecompressions sets how many compressed batches the broker validates
// at once, across every connection (kafka profile; VAST refuses
// compression). A produce request carrying a compressed batch waits for a
// turn; uncompressed ones never wait. Each validation holds at most the
// codec's window (8 MiB: log.MaxZstdWindow, log.MaxSnappyWindow; lz4
// blocks are at most 4 MiB) and a 64 KiB read buffer, so n bounds both the
// memory and the cores that decompression takes, whatever clients send.
// A compaction takes a turn for each compressed batch it decompresses, and
// holds that batch's records (at most log.MaxDecompressedBytes) while it has
// the turn. The default is DefaultDecompressions(); values below 1 mean 1.
// Kafka has no such bound: its request handler threads (num.io.threads) and
// its one log cleaner thread bound everything at once.
func WithDecompressions(n int) Option { return func(c *config) { c.decompressions = max(n, 1) } }

// DefaultDecompressions is half of GOMAXPROCS, at least 1: compression
// bombs from any number of connections leave at least half of the cores
// (when there are two or more) to other clients.
func DefaultDecompressions() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// DefaultEmptyFetchDelay paces empty Fetch answers in the VAST profile: see
// WithEmptyFetchDelay.
const DefaultEmptyFetchDelay = 20 * time.Millisecond

// WithEmptyFetchDelay paces empty Fetch answers where VAST answers at once
// (the NoDelayedFetch rule): a fetch that finds no records is answered
// after d, or after half of the fetch's own fetch.wait.max.ms if that is
// shorter (kafka-go's read deadline is exactly fetch.wait.max.ms), standing in for the network round trip that separates a consumer from a
// real VAST broker and that a loopback connection lacks. Without it an idle
// consumer fetches in a tight loop, tens of thousands of times a second,
// and the broker and the client each burn most of a core. Records written
// to any partition the fetch reads end the pause at once, and the answer
// carries them, so pacing never delays a record; an answer with an error
// is never paced. The answer is still empty and still comes long before
// fetch.wait.max.ms, as VAST's does. The default is
// DefaultEmptyFetchDelay, 20ms, a round trip to a broker in another
// region: an idle consumer then fetches 50 times a second and costs the
// broker and the client about 1% of a core each, and a request queued
// behind an empty fetch on the same connection (clients that share one
// connection for fetches and other requests) waits at most that long.
// 0 answers at once, as VAST does, and spins idle consumers. It has no
// effect in the kafka profile, where an empty fetch waits for data up to
// half of fetch.wait.max.ms. The pause is wall-clock time, whatever clock
// the broker runs on; Close ends it at once, and a connection the client
// closes during it is let go when it ends, at most d later.
func WithEmptyFetchDelay(d time.Duration) Option {
	return func(c *config) { c.emptyFetchDelay = d }
}

// WithFetchDetail makes the request log keep, for every Fetch, what each
// partition returned (RequestRecord.Partitions: the fetch offset, the
// records and bytes returned, the high watermark and the error), so that
// a consumer that reads nothing can be diagnosed from the request log. It
// is off by default: it costs an allocation per Fetch answered and up to
// maxFetchDetail partitions of memory per record.
func WithFetchDetail(on bool) Option {
	return func(c *config) { c.fetchDetail = on }
}

// TopicSpec describes a topic to create at start.
type TopicSpec struct {
	Name       string
	Partitions int32
	Configs    map[string]string
	// ReplicationFactor is the topic's replication factor in the kafka
	// profile with several brokers; 0 takes default.replication.factor
	// (WithDefaultReplicationFactor), and New fails for one above the
	// broker count.
	ReplicationFactor int16
}

// ErrClosed is returned by calls on a closed broker.
var ErrClosed = errors.New("broker is closed")

// New starts a broker listening on its configured address and returns it
// once it accepts connections. It fails if the address cannot be bound, the
// profile is unknown, or a seed topic is invalid.
func New(opts ...Option) (*Broker, error) {
	cfg := config{listen: "127.0.0.1:0", brokers: 1, retentionEv: DefaultRetentionCheckInterval, partitions: DefaultPartitions, producerExp: DefaultProducerIDExpiration,
		idleTimeout: DefaultIdleTimeout, readTimeout: DefaultReadTimeout, tlsHandshakeTimeout: DefaultTLSHandshakeTimeout,
		emptyFetchDelay: DefaultEmptyFetchDelay,
		minSession:      coordinator.DefaultMinSessionTimeout, maxSession: coordinator.DefaultMaxSessionTimeout,
		maxOffsetMD: coordinator.DefaultOffsetMetadataMaxBytes, decompressions: DefaultDecompressions(),
		cgSession: coordinator.DefaultConsumerSessionTimeout, cgInterval: coordinator.DefaultConsumerHeartbeatInterval,
		cgMaxSize: coordinator.DefaultConsumerGroupMaxSize}
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.rulesSet {
		cfg.rules = rules.VAST()
	}
	if cfg.kafka == (KafkaVersion{}) {
		cfg.kafka = DefaultKafkaVersion
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if !slices.Contains(KafkaVersions(), cfg.kafka) {
		return nil, fmt.Errorf("vastfake: unknown Kafka version %s (want one of %s)", cfg.kafka, kafkaVersionNames())
	}
	for _, p := range cfg.policies {
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("vastfake: %w", err)
		}
	}
	for name := range cfg.users {
		if name == "" {
			return nil, errors.New("vastfake: a SASL user needs a name")
		}
	}
	creds, err := newCredentials(cfg.users)
	if err != nil {
		return nil, err
	}
	cfg.users = nil // derived: no password is kept
	if cfg.maxOffsetMD < 0 {
		return nil, fmt.Errorf("vastfake: offset.metadata.max.bytes %d: want 0 or more", cfg.maxOffsetMD)
	}
	if cfg.partitions < 1 || cfg.partitions > MaxPartitionsPerRequest {
		return nil, fmt.Errorf("vastfake: num.partitions %d: want 1 to %d, what one CreateTopics may create", cfg.partitions, MaxPartitionsPerRequest)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"idle timeout", cfg.idleTimeout}, {"read timeout", cfg.readTimeout},
		{"TLS handshake timeout", cfg.tlsHandshakeTimeout}, {"empty fetch delay", cfg.emptyFetchDelay},
		{"minimum session timeout", cfg.minSession}, {"maximum session timeout", cfg.maxSession},
		{"producer id expiration", cfg.producerExp}, {"initial rebalance delay", cfg.rebalDelay},
		{"election delay", cfg.electionDelay},
	} {
		if d.d < 0 {
			return nil, fmt.Errorf("vastfake: %s %v: want 0 (none) or more", d.name, d.d)
		}
	}
	// Intervals of periodic work: Kafka counts them in milliseconds, and a
	// shorter one would keep an idle broker busy.
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"retention check interval", cfg.retentionEv}, {"compaction interval", cfg.compactionEv}} {
		if d.d < 0 || d.d > 0 && d.d < MinInterval {
			return nil, fmt.Errorf("vastfake: %s %v: want 0 (off) or %v or more", d.name, d.d, MinInterval)
		}
	}
	if len(cfg.clusterID) > MaxStartName || len(cfg.view) > MaxStartName {
		return nil, fmt.Errorf("vastfake: a cluster id or view name of %d bytes: want at most %d", max(len(cfg.clusterID), len(cfg.view)), MaxStartName)
	}
	if cfg.nodeID < 0 || int64(cfg.nodeID)+int64(cfg.brokers)-1 > math.MaxInt32 {
		return nil, fmt.Errorf("vastfake: node id %d: want 0 to %d for %d brokers", cfg.nodeID, math.MaxInt32-int64(cfg.brokers)+1, cfg.brokers)
	}
	if cfg.replicationFactor < 0 || int(cfg.replicationFactor) > MaxBrokers {
		return nil, fmt.Errorf("vastfake: default replication factor %d: want 0 (3, capped at the broker count) to %d", cfg.replicationFactor, MaxBrokers)
	}
	if cfg.cgSession < time.Millisecond || cfg.cgInterval < time.Millisecond || cfg.cgInterval >= cfg.cgSession {
		return nil, fmt.Errorf("vastfake: consumer group session timeout %v and heartbeat interval %v: want both at least 1ms and the interval shorter", cfg.cgSession, cfg.cgInterval)
	}
	if cfg.cgMaxSize < 1 {
		return nil, fmt.Errorf("vastfake: group.consumer.max.size %d: want at least 1", cfg.cgMaxSize)
	}
	if cfg.minSession > 0 && cfg.maxSession > 0 && cfg.minSession > cfg.maxSession {
		return nil, fmt.Errorf("vastfake: the minimum session timeout %v is above the maximum %v", cfg.minSession, cfg.maxSession)
	}
	if cfg.view == "" {
		cfg.view = DefaultView
	}
	if t := cfg.tls; t != nil && len(t.Certificates) == 0 && t.GetCertificate == nil && t.GetConfigForClient == nil {
		return nil, errors.New("vastfake: the TLS config has no certificate")
	}
	if cfg.clock == nil {
		cfg.clock = clock.Real{}
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	} else {
		cfg.logger = slog.New(clipHandler{cfg.logger.Handler()})
	}
	if cfg.clusterID == "" {
		cfg.clusterID = randomID()
	}
	b := &Broker{
		cfg:        cfg,
		rules:      cfg.rules,
		modes:      cfg.rules.Modes(),
		clock:      cfg.clock,
		log:        cfg.logger,
		clusterID:  cfg.clusterID,
		conns:      make(map[*clientConn]struct{}),
		data:       newStore(),
		dataNotify: make(chan struct{}),
		producers:  log.NewProducers(MaxProducerStates),
		authz:      authorizer{policies: cfg.policies, defaultDeny: cfg.defaultDeny},
		creds:      creds,
		decompress: make(chan struct{}, cfg.decompressions),
		held:       heldProduces{maxN: MaxHeldProduces, maxBytes: MaxHeldProduceBytes},
		largeTurn:  make(chan struct{}, 1),
	}
	if b.enforced(rules.StaleEndOffset) {
		b.staleEnd.Store(int64(cfg.rules.StaleEndOffset))
	}
	b.apis, b.hiddenBy, b.auditedBy = buildAPIs(&b.rules, cfg.kafka)
	for i := range b.apis {
		b.apiByKey[b.apis[i].key] = &b.apis[i]
	}
	b.features = cfg.kafka.features(b.servedVersion)
	b.createOffsetsTopic()
	if err := b.checkSeedTotal(); err != nil {
		return nil, err
	}
	for _, t := range cfg.topics {
		if code, msg := b.createTopic(nil, t.Name, t.Partitions, t.Configs, false); code != 0 {
			return nil, &TopicError{Topic: t.Name, Code: errName(code), Message: msg}
		}
	}
	if err := b.listenNodes(); err != nil {
		return nil, err
	}
	for _, t := range cfg.topics {
		if t.ReplicationFactor == 0 {
			continue
		}
		if code, msg := b.checkReplicationFactor(t.ReplicationFactor); code != 0 {
			b.closeListeners()
			return nil, &TopicError{Topic: t.Name, Code: errName(code), Message: msg}
		}
		if b.elects() {
			b.setReplicationFactor(t.Name, t.ReplicationFactor)
		}
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	var locate func(string) (int32, bool)
	if b.elects() { // groups' coordinators move and go down (coordinatorfailover.go)
		locate = b.locateGroup
	}
	b.coord = coordinator.New(coordinator.Config{
		Rules:                 cfg.rules,
		Clock:                 cfg.clock,
		InitialRebalanceDelay: cfg.rebalDelay,
		MinSessionTimeout:     cfg.minSession,
		MaxSessionTimeout:     cfg.maxSession,
		// The coordinator reads 0 as its default and a negative bound as
		// "empty metadata only", which is what 0 means here, as in Kafka.
		OffsetMetadataMaxBytes:    cmp.Or(cfg.maxOffsetMD, -1),
		Logger:                    b.log,
		Audit:                     b.coordinatorFinding,
		WriteTxnMarkers:           b.writeTxnMarkers,
		Topics:                    b.consumerTopics,
		Topic:                     b.consumerTopic,
		ConsumerSessionTimeout:    cfg.cgSession,
		ConsumerHeartbeatInterval: cfg.cgInterval,
		ConsumerGroupMaxSize:      cfg.cgMaxSize,
		OffsetsTopic:              b.appendOffsetsRecords,
		TxnOffsetsTopic:           b.appendTxnOffsetsRecords,
		AssignmentEpochs:          cfg.kafka.AssignmentEpochs(),
		Locate:                    locate,
	})
	b.scheduleRetention()
	b.scheduleProducerExpiry()
	b.scheduleCompaction()
	for _, n := range b.nodes {
		b.startAccepting(n, n.ln)
	}
	return b, nil
}

// Addr returns the address the broker listens on, host:port; with several
// brokers (WithBrokers), the first one's, the bootstrap address.
func (b *Broker) Addr() string { return b.nodes[0].addr }

// Restart emulates a broker restart that keeps its data: the listeners and
// every connection close, then every broker id listens again on the same
// address (one that is down stays down). Topics, records, groups and
// committed offsets stay, so clients reconnect and carry on. It returns an
// error if an address cannot be bound again (another process took the
// port) or the broker is closed.
func (b *Broker) Restart() error {
	for _, n := range b.nodes {
		n.mu.Lock()
		if b.ctx.Err() != nil {
			n.mu.Unlock()
			return ErrClosed
		}
		if n.down {
			n.mu.Unlock()
			continue
		}
		b.stopNode(n)
		err := b.startNode(n)
		n.mu.Unlock()
		if err != nil {
			return fmt.Errorf("vastfake: restart: %w", err)
		}
	}
	return nil
}

// listen listens on addr, with TLS when the broker has a TLS config.
func (b *Broker) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if b.cfg.wrapListener != nil {
		ln = b.cfg.wrapListener(ln)
	}
	if b.cfg.tls == nil {
		return ln, nil
	}
	return tls.NewListener(ln, b.cfg.tls), nil
}

// AdvertisedAddr returns the host:port that Metadata hands to clients for
// the first broker id, the bootstrap address.
func (b *Broker) AdvertisedAddr() string { return b.nodes[0].advertised() }

// Rules returns the rules the broker applies; Audit names those it audits.
func (b *Broker) Rules() rules.Rules { return b.rules }

// Clock returns the broker's clock.
func (b *Broker) Clock() clock.Clock { return b.clock }

// Close stops accepting connections, closes every open connection, fails
// requests that are waiting (a JoinGroup in a rebalance, a delayed fetch) and
// returns once every goroutine the broker started has exited. Stored data is
// dropped with the broker. Close is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.cancel()
		for _, n := range b.nodes {
			n.mu.Lock()
			n.ln.Close()
			if n.stopBlackout != nil {
				n.stopBlackout()
			}
			n.mu.Unlock()
		}
		b.stopFenceTimers(-1)
		b.connsMu.Lock()
		for c := range b.conns {
			c.nc.Close()
		}
		b.connsMu.Unlock()
		b.coord.Close()
		b.sweepMu.Lock()
		if b.stopSweep != nil {
			b.stopSweep()
			b.stopSweep = nil
		}
		if b.stopExpire != nil {
			b.stopExpire()
			b.stopExpire = nil
		}
		if b.stopCompact != nil {
			b.stopCompact()
			b.stopCompact = nil
		}
		b.sweepMu.Unlock()
		b.wg.Wait()
	})
	return nil
}

// acceptLoop accepts connections on ln until ln closes or the broker does.
// A failed accept (out of file descriptors, say) is retried after a pause
// that doubles from 5 ms to 1 s while failures last, as net/http does, so
// the broker serves again once descriptors free up.
func (b *Broker) acceptLoop(n *node, ln net.Listener) {
	defer b.wg.Done()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if b.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			b.log.Warn("accept failed; retrying", "err", err, "retry_in", pause)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		pause = 0
		c := newClientConn(b, n, nc)
		b.connsMu.Lock()
		if b.ctx.Err() != nil {
			b.connsMu.Unlock()
			nc.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.wg.Add(1)
		b.connsMu.Unlock()
		go func() {
			defer b.wg.Done()
			c.serve()
			b.connsMu.Lock()
			delete(b.conns, c)
			b.connsMu.Unlock()
		}()
	}
}

// scheduleRetention runs retention over every partition every
// retention-check interval on the broker's clock (once for many intervals
// that pass in one advance of a manual clock: clock.Every).
func (b *Broker) scheduleRetention() {
	b.sweepMu.Lock()
	defer b.sweepMu.Unlock()
	if b.ctx.Err() != nil || b.cfg.retentionEv <= 0 {
		return
	}
	b.stopSweep = clock.Every(b.clock, b.cfg.retentionEv, func() { b.background(b.ApplyRetention) })
}

// producerExpiryCheck is how often, on the broker's clock, producer state
// older than producer.id.expiration.ms is dropped (Kafka's
// producer.id.expiration.check.interval.ms, 10 minutes there: a second
// here, so that a test advancing a manual clock past the expiration sees
// it).
const producerExpiryCheck = time.Second

// scheduleProducerExpiry expires idle producers' state every
// producerExpiryCheck on the broker's clock.
func (b *Broker) scheduleProducerExpiry() {
	b.sweepMu.Lock()
	defer b.sweepMu.Unlock()
	if b.ctx.Err() != nil {
		return
	}
	b.stopExpire = clock.Every(b.clock, producerExpiryCheck, func() { b.background(b.expireProducers) })
}

// background runs fn, a timer's work, as work the broker owns: Close waits
// for it to finish, and once Close has begun it does not start.
func (b *Broker) background(fn func()) {
	b.sweepMu.Lock()
	if b.ctx.Err() != nil {
		b.sweepMu.Unlock()
		return
	}
	b.wg.Add(1)
	b.sweepMu.Unlock()
	defer b.wg.Done()
	fn()
}

// ApplyRetention drops, from every partition of a topic whose
// cleanup.policy includes delete (the default), the batches older than its
// topic's retention.ms on the broker's clock, then the oldest batches while
// the partition would still hold retention.bytes without them, and moves
// log start offsets;
// as in Kafka, a topic with cleanup.policy=compact alone keeps its records
// whatever their age. The broker runs it periodically; tests on a manual
// clock may call it directly after advancing time.
func (b *Broker) ApplyRetention() {
	now := b.clock.Now()
	for _, t := range b.data.all() {
		cfg := t.config()
		if !cfg.delete {
			continue
		}
		for _, p := range t.partitions {
			p.ApplyRetention(now, cfg.retention)
			p.ApplyRetentionBytes(cfg.retentionBytes)
		}
	}
}

// expireProducers forgets the idempotent producers that have not appended
// for producer.id.expiration.ms on the broker's clock.
func (b *Broker) expireProducers() {
	if b.cfg.producerExp <= 0 {
		return
	}
	now := b.clock.Now()
	b.appendMu.Lock()
	defer b.appendMu.Unlock()
	b.producers.Expire(now, b.cfg.producerExp)
}

// notifyData wakes fetches waiting for new records: delayed fetches in the
// Kafka profile, paced empty fetches in the VAST profile. Produce calls it
// after the records are published, and topic deletion after the topic is
// gone; with no fetch waiting it costs one atomic load. A woken fetch reads
// again and answers if it finds records or an error.
// A fetch counts itself in fetchWaiters before it reads the log, so either
// that read sees the records or this call sees the waiter.
func (b *Broker) notifyData() {
	if b.fetchWaiters.Load() == 0 {
		return
	}
	b.notifyMu.Lock()
	close(b.dataNotify)
	b.dataNotify = make(chan struct{})
	b.notifyMu.Unlock()
}

func (b *Broker) dataWaiter() <-chan struct{} {
	b.notifyMu.Lock()
	defer b.notifyMu.Unlock()
	return b.dataNotify
}

func randomID() string {
	var id [16]byte
	if _, err := io.ReadFull(rand.Reader, id[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// StaleEndOffset returns how far ListOffsets(latest) trails writes.
func (b *Broker) StaleEndOffset() time.Duration { return time.Duration(b.staleEnd.Load()) }

// SetStaleEndOffset makes ListOffsets(latest) report the high watermark as
// it was d ago on the broker's clock, emulating VAST's end offset that
// trails a burst of writes (VAST's Consume events page). 0 turns it off.
func (b *Broker) SetStaleEndOffset(d time.Duration) { b.staleEnd.Store(int64(d)) }

// errName names a Kafka error code.
func errName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return "NONE"
}

// maxLogged is how many bytes of a client-supplied string (a client id, a
// user name, a denial naming either) the request log and the log lines
// keep; clip marks the rest.
const maxLogged = 256

// clip returns s if it is at most maxLogged bytes long, and otherwise its
// first maxLogged bytes (cut at a character boundary) followed by
// "…(N bytes)", N being len(s). A client sending a 500 KiB user name then
// costs the logs a few hundred bytes per attempt.
func clip(s string) string {
	if len(s) <= maxLogged {
		return s
	}
	return runePrefix(s, maxLogged) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// runePrefix returns the longest prefix of s of at most n bytes that ends
// on a character boundary.
func runePrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// clipHandler passes every log record on with its string values clipped,
// so that no log line carries a client's long input whole, whoever logs it.
type clipHandler struct{ slog.Handler }

func (h clipHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, clip(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(clipAttr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h clipHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clipped := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clipped[i] = clipAttr(a)
	}
	return clipHandler{h.Handler.WithAttrs(clipped)}
}

func (h clipHandler) WithGroup(name string) slog.Handler {
	return clipHandler{h.Handler.WithGroup(name)}
}

// clipAttr clips a string value, or any other value that prints long (an
// error, a panic value); it leaves numbers, durations and short values be.
func clipAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); len(s) > maxLogged {
			return slog.String(a.Key, clip(s))
		}
	case slog.KindAny:
		if s := fmt.Sprint(v.Any()); len(s) > maxLogged {
			return slog.String(a.Key, clip(s))
		}
	case slog.KindGroup:
		group := v.Group()
		clipped := make([]any, len(group))
		for i, g := range group {
			clipped[i] = clipAttr(g)
		}
		return slog.Group(a.Key, clipped...)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
