package main

// Configuration of the binary: flags, environment variables and an optional
// JSON config file whose keys are the flag names.
//
// Precedence for a single-valued setting: a flag on the command line beats
// the config file, which beats the environment, which beats the built-in
// default. Repeatable settings (-topic, -rule) add up instead, applied in the
// order environment, file, command line, so a later -rule for the same rule
// wins.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/coordinator"
	"github.com/vastfake/vastfake/rules"
)

// kafkaInitialRebalanceDelay is Kafka's default group.initial.rebalance.delay.ms,
// the binary's with -profile kafka.
const kafkaInitialRebalanceDelay = 3 * time.Second

// config is the binary's whole configuration once every source is merged.
type config struct {
	Listen                 string
	Advertise              string
	Profile                string
	KafkaVersion           broker.KafkaVersion
	Topics                 []broker.TopicSpec
	Rules                  rules.Rules
	InitialRebalanceDelay  time.Duration
	NumPartitions          int32
	Brokers                int
	OffsetMetadataMaxBytes int
	MinSessionTimeout      time.Duration
	MaxSessionTimeout      time.Duration
	RetentionCheckInterval time.Duration
	CompactionInterval     time.Duration
	OffsetGaps             []broker.OffsetGap
	IdleTimeout            time.Duration
	ProducerIDExpiration   time.Duration
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are Kafka's
	// group.consumer.session.timeout.ms and heartbeat.interval.ms for
	// KIP-848 consumer groups.
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	EmptyFetchDelay           time.Duration
	// ElectionDelay is how long a broker taken down keeps its partitions
	// before new leaders are elected (kafka profile, several brokers);
	// ElectionDelaySet says -election-delay was given.
	ElectionDelay            time.Duration
	ElectionDelaySet         bool
	DefaultReplicationFactor int
	ManualClock              bool
	FetchDetail              bool
	// ExitOnStdinClose makes the binary close when its stdin reaches end of
	// file, so that a launcher's child dies with the launcher.
	ExitOnStdinClose bool
	HTTP             string
	HTTPToken        string
	HTTPAllowHosts   []string
	ReadyFile        string
	AuditReport      string
	LogLevel         string
	LogFormat        string

	// Security: SASL/PLAIN users, identity policies and TLS.
	Users       map[string]string
	Policies    []broker.Policy
	DefaultDeny bool
	View        string
	TLSCert     string
	TLSKey      string
}

// listFlag is a repeatable flag whose values come from the environment, the
// config file and the command line, kept apart so that they apply in that
// order whatever order they were read in.
type listFlag struct {
	env, file, cmd []string
	split          func(string) []string
}

func (l *listFlag) String() string { return strings.Join(l.all(), " ") }

func (l *listFlag) Set(v string) error {
	l.cmd = append(l.cmd, l.split(v)...)
	return nil
}

func (l *listFlag) all() []string {
	return append(append(append([]string{}, l.env...), l.file...), l.cmd...)
}

// splitSpecs splits a comma-separated list of name[:...]=... items where an
// item's own value may contain commas: a piece that does not start a new
// item (continues(piece) is true) is glued back onto the previous one. Topic
// specs continue with key=value configs (no ':'), rule switches with list
// elements (no '=').
func splitSpecs(v string, continues func(string) bool) []string {
	var out []string
	for _, piece := range strings.Split(v, ",") {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		if len(out) > 0 && continues(piece) {
			out[len(out)-1] += "," + piece
			continue
		}
		out = append(out, piece)
	}
	return out
}

func splitTopics(v string) []string {
	return splitSpecs(v, func(p string) bool { return strings.Contains(p, "=") && !strings.Contains(p, ":") })
}

func splitRules(v string) []string {
	return splitSpecs(v, func(p string) bool { return !strings.Contains(p, "=") })
}

// splitPlain splits a plain comma-separated list (users, policies).
func splitPlain(v string) []string {
	return splitSpecs(v, func(string) bool { return false })
}

// parseTopic parses name[:partitions[:key=value,key=value...]]. Partitions
// default to 1.
func parseTopic(spec string) (broker.TopicSpec, error) {
	name, rest, _ := strings.Cut(spec, ":")
	parts, configs, _ := strings.Cut(rest, ":")
	t := broker.TopicSpec{Name: name, Partitions: 1}
	if name == "" {
		return t, fmt.Errorf("topic %q: no name", spec)
	}
	if parts != "" {
		n, err := strconv.Atoi(parts)
		if err != nil || n <= 0 {
			return t, fmt.Errorf("topic %q: partitions must be a positive number", spec)
		}
		t.Partitions = int32(n)
	}
	for _, kv := range strings.Split(configs, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return t, fmt.Errorf("topic %q: config %q is not key=value", spec, kv)
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		t.Configs[k] = v
	}
	return t, nil
}

// parseOffsetGap parses topic:skip[:every]; every defaults to 1 (a gap
// before every batch but the first).
func parseOffsetGap(spec string) (broker.OffsetGap, error) {
	parts := strings.Split(spec, ":")
	g := broker.OffsetGap{Topic: parts[0], Every: 1}
	bad := fmt.Errorf("offset gap %q: want topic:skip[:every] with skip >= 1 and every >= 1", spec)
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return g, bad
	}
	var err error
	if g.Skip, err = strconv.ParseInt(parts[1], 10, 64); err != nil || g.Skip < 1 {
		return g, bad
	}
	if len(parts) == 3 {
		if g.Every, err = strconv.ParseInt(parts[2], 10, 64); err != nil || g.Every < 1 {
			return g, bad
		}
	}
	return g, nil
}

// setRule sets one field of r from "Field=value". The field name matches
// any case; the value is parsed by the field's type: bool, int, a Go
// duration ("30s") or a comma-separated list of strings. For a rule the
// value may also be a mode: "enforce", "audit" or "off" (see
// rules.Rules.SetMode); a plain value leaves the rule's mode as the
// profile set it.
func setRule(r *rules.Rules, spec string) error {
	name, val, ok := strings.Cut(spec, "=")
	if !ok {
		return fmt.Errorf("rule %q: want Name=value", spec)
	}
	for _, id := range rules.IDs() {
		if !strings.EqualFold(id.String(), strings.TrimSpace(name)) {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "enforce":
			r.SetMode(id, rules.Enforce)
			return nil
		case "audit":
			r.SetMode(id, rules.Audit)
			return nil
		case "off":
			r.SetMode(id, rules.Off)
			return nil
		}
	}
	v := reflect.ValueOf(r).Elem()
	var f reflect.Value
	for i := 0; i < v.NumField(); i++ {
		if strings.EqualFold(v.Type().Field(i).Name, strings.TrimSpace(name)) {
			f = v.Field(i)
			name = v.Type().Field(i).Name
		}
	}
	if !f.IsValid() {
		return fmt.Errorf("rule %q: unknown rule; rules are %s", name, strings.Join(ruleNames(), ", "))
	}
	val = strings.TrimSpace(val)
	bad := func(want string) error { return fmt.Errorf("rule %s=%q: want %s", name, val, want) }
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 {
			return bad("a non-negative duration such as 30s")
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return bad("true or false")
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int:
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			// A negative limit would silently mean no limit: 0 says that.
			return bad("a number >= 0 (0 means no limit or the default)")
		}
		f.SetInt(int64(n))
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		var list []string
		for _, s := range strings.Split(val, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		f.Set(reflect.ValueOf(list))
	default:
		return fmt.Errorf("rule %s cannot be set from the command line", name)
	}
	return nil
}

// ruleNames lists the fields of rules.Rules.
func ruleNames() []string {
	t := reflect.TypeOf(rules.Rules{})
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Name
	}
	sort.Strings(names)
	return names
}

// envName is the environment variable of a flag: VASTFAKE_ and the flag
// name in upper case with dashes as underscores.
func envName(flagName string) string {
	return "VASTFAKE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// unhealthyError is -healthcheck's answer when the broker does not answer:
// the binary exits 1, which a container health check reads as unhealthy
// (2 is reserved there).
type unhealthyError struct{ err error }

func (e *unhealthyError) Error() string { return e.err.Error() }
func (e *unhealthyError) Unwrap() error { return e.err }

// commands are the flags that do something and exit instead of setting
// something: no environment variable or config file key sets them.
var commands = map[string]bool{"version": true, "healthcheck": true}

// errDone is returned by parseConfig once it has answered -h or -version
// on stdout: the binary then exits 0 without starting.
var errDone = errors.New("done")

// flagError is a command-line error that the flag package has already
// printed to stderr with the usage; main prints it no second time.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// parseConfig merges the environment, the config file and args into a
// config. -h and -help print the usage on stdout and -version the version,
// and both return errDone; a flag error prints with the usage to stderr and
// returns a *flagError.
func parseConfig(args []string, stdout, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("vastfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	usage := func(w io.Writer) {
		fs.SetOutput(w)
		fmt.Fprintln(w, "Usage: vastfake [flags]\n\nvastfake runs an in-memory Kafka broker that behaves like VAST Event Broker 5.5.\n\nFlags:")
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	fs.Usage = func() {} // printed below, where it belongs: stdout for -h, stderr for a mistake
	str := func(name, def, help string) *string {
		return fs.String(name, def, help+" (env "+envName(name)+")")
	}
	dur := func(name, help string) *string { return str(name, "", help+"; a Go duration such as 3s") }
	listen := str("listen", "127.0.0.1:9092", "address to listen on; port 0 picks a free one")
	advertise := str("advertise", "", "host:port clients are told to connect to, or with -brokers one per broker, comma-separated; default the listen addresses")
	brokers := fs.Int("brokers", 1, "broker ids, each with its own listener, listed in Metadata: the first on -listen, the others on the ports after it (all picked by the system when its port is 0); 1 to 16 (env VASTFAKE_BROKERS)")
	profile := str("profile", "vast", "rules to apply: vast (enforce every VAST rule), kafka (none) or audit (behave as Kafka and report what VAST would refuse or do differently)")
	kafkaVersion := str("kafka-version", broker.DefaultKafkaVersion.String(), "Kafka release whose semantics the kafka and audit profiles follow where 4.x releases differ: 4.0 (transactions v1, KIP-848 commits at the member's exact epoch), 4.1, 4.2 (share groups), 4.3 (transactions v2, KIP-1251 assignment epochs); ApiVersions follows it")
	auditReport := str("audit-report", "", "at exit, write the findings of audited rules to FILE.md and FILE.json (or only FILE, when it ends in .md or .json)")
	rebal := dur("initial-rebalance-delay", "group.initial.rebalance.delay.ms: how long a new group waits for more members; default 0, and Kafka's 3s with -profile kafka (but not with -manual-clock, where it would hold every new group until the clock is advanced)")
	minSession := dur("min-session-timeout", "group.min.session.timeout.ms: a JoinGroup with a shorter session timeout gets INVALID_SESSION_TIMEOUT; default 6s as in Kafka, 0 for no bound")
	maxSession := dur("max-session-timeout", "group.max.session.timeout.ms: a JoinGroup with a longer session timeout gets INVALID_SESSION_TIMEOUT; default 30m as in Kafka, 0 for no bound")
	stale := dur("stale-end-offset", "make ListOffsets(latest) trail writes by this long (the StaleEndOffset rule); default 0, off")
	numPartitions := fs.Int("num-partitions", broker.DefaultPartitions, "num.partitions: partitions of a topic auto-created (kafka profile) or created with -1 partitions (env VASTFAKE_NUM_PARTITIONS)")
	offsetMD := fs.Int("offset-metadata-max-bytes", coordinator.DefaultOffsetMetadataMaxBytes, "offset.metadata.max.bytes: an OffsetCommit partition with longer metadata gets OFFSET_METADATA_TOO_LARGE; 0 allows only empty metadata (env VASTFAKE_OFFSET_METADATA_MAX_BYTES)")
	retention := dur("retention-check-interval", "how often retention.ms and retention.bytes are applied, on the broker's clock; default 1s, 0 for never")
	compaction := dur("compaction-interval", "how often topics with cleanup.policy=compact are compacted, on the broker's clock, when min.cleanable.dirty.ratio calls for it; default 0, off (POST /topics/{name}/compact compacts on demand)")
	idle := dur("idle-timeout", "close a connection that sends no request for this long (connections.max.idle.ms); default 10m, 0 never")
	producerExp := dur("producer-id-expiration", "producer.id.expiration.ms: forget an idempotent producer that has not written to a partition for this long, on the broker's clock (kafka profile); default 24h, 0 never")
	emptyFetch := dur("empty-fetch-delay", "vast profile: answer a fetch that finds no records after this long (or half its fetch.wait.max.ms if shorter), standing in for a network round trip; new records end it at once; default 20ms, 0 answers at once")
	cgSession := dur("consumer-session-timeout", "group.consumer.session.timeout.ms: a KIP-848 consumer group member that sends no heartbeat for this long is fenced and its partitions move, on the broker's clock (kafka and audit profiles); default 45s")
	cgInterval := dur("consumer-heartbeat-interval", "group.consumer.heartbeat.interval.ms: how often KIP-848 consumer group members are told to heartbeat; shorter than -consumer-session-timeout; default 5s")
	election := dur("election-delay", "kafka profile with several brokers: how long a broker taken down (POST /brokers/{id}/down) keeps leading its partitions before it is fenced and their next in-sync replicas lead, on the broker's clock; default 9s (broker.session.timeout.ms), 0 elects at once")
	replFactor := fs.Int("default-replication-factor", 0, "default.replication.factor: replicas of a topic created without a replication factor (kafka profile with several brokers); default 0, which is 3 capped at the broker count (env VASTFAKE_DEFAULT_REPLICATION_FACTOR)")
	manual := fs.Bool("manual-clock", false, "run the broker on a clock that moves only when POST /clock/advance moves it, from the wall time at start (env VASTFAKE_MANUAL_CLOCK)")
	fetchDetail := fs.Bool("fetch-detail", false, "keep, in the request log (GET /requests), what each partition of every Fetch returned: fetch offset, records and bytes, high watermark, error; for a consumer that reads nothing; costs memory (env VASTFAKE_FETCH_DETAIL)")
	exitOnStdinClose := fs.Bool("exit-on-stdin-close", false, "close the broker when stdin reaches end of file, so that it dies with the launcher holding the other end of the pipe, however that ends (env VASTFAKE_EXIT_ON_STDIN_CLOSE)")
	httpAddr := str("http", "", "host:port of the HTTP control plane and live page; off unless set")
	httpToken := str("http-token", "", "token the control plane requires (Authorization: Bearer <token>, or ?token=); with -user and no token, one is generated and printed on stdout")
	httpAllowHosts := str("http-allow-hosts", "", "comma-separated host names the control plane answers besides localhost and IP addresses (DNS rebinding protection); * allows any")
	ready := str("ready-file", "", "file to write the bootstrap address to once the broker accepts connections")
	logLevel := str("log-level", "info", "debug (every request), info (every refusal with its VAST rule), warn or error")
	logFormat := str("log-format", "text", "text or json")
	configFile := str("config", "", "JSON file whose keys are flag names, e.g. {\"topic\": [\"orders:3\"], \"rule\": [\"MaxGroups=10\"]}")
	topics := &listFlag{split: splitTopics}
	fs.Var(topics, "topic", "topic to create at start: name[:partitions[:key=value,...]], repeatable (env VASTFAKE_TOPICS, comma-separated)")
	gaps := &listFlag{split: splitPlain}
	fs.Var(gaps, "offset-gap", "leave unused offsets in a topic's partitions, as compaction would: topic:skip[:every] skips skip offsets once every records (default 1) were appended since the last gap, repeatable (env VASTFAKE_OFFSET_GAPS, comma-separated)")
	ruleFlags := &listFlag{split: splitRules}
	fs.Var(ruleFlags, "rule", "override one rule of the profile: Field=value with a rules.Rules field name, or Field=enforce|audit|off, repeatable (env VASTFAKE_RULES, comma-separated)")
	users := &listFlag{split: splitPlain}
	fs.Var(users, "user", "SASL/PLAIN user name:password; any user makes the listener require SASL, repeatable (env VASTFAKE_USERS, comma-separated)")
	policies := &listFlag{split: splitPlain}
	fs.Var(policies, "policy", "identity policy \"allow|deny user action resource\", e.g. \"deny app KafkaWrite vast:kafka:topic:vastfake:audit\", repeatable (env VASTFAKE_POLICIES, comma-separated)")
	defaultDeny := fs.Bool("default-deny", false, "deny a request no policy matches; VAST allows it (env VASTFAKE_DEFAULT_DENY)")
	view := str("view", broker.DefaultView, "view name in policy resource names, vast:kafka:topic:<view>:<topic>")
	tlsCert := str("tls-cert", "", "PEM certificate file: the listener then speaks TLS only (with -tls-key)")
	tlsKey := str("tls-key", "", "PEM private key file of -tls-cert")
	version := fs.Bool("version", false, "print the version and exit")
	healthcheck := fs.Bool("healthcheck", false, "check that the control plane at the -http address (set by flag, environment or config file) answers GET /healthz, and exit 0 if it does, 1 if not: a container's health check, for an image with no shell or curl")

	// The environment changes the defaults.
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if commands[f.Name] {
			return // a command, not a setting
		}
		if l, ok := f.Value.(*listFlag); ok {
			env := envName(f.Name) + "S"
			if base, ok := strings.CutSuffix(env, "YS"); ok {
				env = base + "IES" // VASTFAKE_POLICIES
			}
			if v := os.Getenv(env); v != "" {
				l.env = l.split(v)
			}
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout) // asked for, the usage is the answer: stdout, exit 0
			return nil, errDone
		}
		usage(stderr) // after the flag package's own line naming the mistake
		return nil, &flagError{err}
	}
	if *version {
		fmt.Fprintln(stdout, versionLine())
		return nil, errDone
	}
	if *healthcheck {
		if err := checkHealth(*httpAddr); err != nil {
			return nil, &unhealthyError{err}
		}
		return nil, errDone
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *configFile != "" {
		if err := applyConfigFile(fs, *configFile); err != nil {
			return nil, err
		}
	}

	cfg := &config{
		Listen: *listen, Advertise: *advertise, Profile: *profile, HTTP: *httpAddr, HTTPToken: *httpToken,
		HTTPAllowHosts: splitPlain(*httpAllowHosts),
		ReadyFile:      *ready, AuditReport: *auditReport, LogLevel: *logLevel, LogFormat: *logFormat, ManualClock: *manual,
		ExitOnStdinClose: *exitOnStdinClose, FetchDetail: *fetchDetail,
		DefaultDeny: *defaultDeny, View: *view, TLSCert: *tlsCert, TLSKey: *tlsKey,
		IdleTimeout:               broker.DefaultIdleTimeout,
		RetentionCheckInterval:    broker.DefaultRetentionCheckInterval,
		ProducerIDExpiration:      broker.DefaultProducerIDExpiration,
		ConsumerSessionTimeout:    coordinator.DefaultConsumerSessionTimeout,
		ConsumerHeartbeatInterval: coordinator.DefaultConsumerHeartbeatInterval,
		EmptyFetchDelay:           broker.DefaultEmptyFetchDelay,
		MinSessionTimeout:         coordinator.DefaultMinSessionTimeout,
		MaxSessionTimeout:         coordinator.DefaultMaxSessionTimeout,
	}
	for _, spec := range users.all() {
		name, pass, ok := strings.Cut(spec, ":")
		if !ok || name == "" || pass == "" {
			return nil, fmt.Errorf("user %q: want name:password", spec)
		}
		if cfg.Users == nil {
			cfg.Users = map[string]string{}
		}
		cfg.Users[name] = pass
	}
	for _, spec := range policies.all() {
		p, err := broker.ParsePolicy(spec)
		if err != nil {
			return nil, err
		}
		cfg.Policies = append(cfg.Policies, p)
	}
	if *numPartitions < 1 || *numPartitions > math.MaxInt32 {
		return nil, fmt.Errorf("-num-partitions %d: want 1 to %d", *numPartitions, math.MaxInt32)
	}
	cfg.NumPartitions = int32(*numPartitions)
	if *brokers < 1 || *brokers > broker.MaxBrokers {
		return nil, fmt.Errorf("-brokers %d: want 1 to %d", *brokers, broker.MaxBrokers)
	}
	cfg.Brokers = *brokers
	cfg.ElectionDelaySet = *election != ""
	if *replFactor < 0 || *replFactor > broker.MaxBrokers {
		return nil, fmt.Errorf("-default-replication-factor %d: want 0 (default) to %d", *replFactor, broker.MaxBrokers)
	}
	cfg.DefaultReplicationFactor = *replFactor
	if *offsetMD < 0 || *offsetMD > math.MaxInt32 {
		return nil, fmt.Errorf("-offset-metadata-max-bytes %d: want 0 to %d", *offsetMD, math.MaxInt32)
	}
	cfg.OffsetMetadataMaxBytes = *offsetMD
	if cfg.AuditReport != "" {
		// Checked at start: at exit the report could only be lost.
		if fi, err := os.Stat(filepath.Dir(cfg.AuditReport)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("-audit-report %s: directory %s does not exist", cfg.AuditReport, filepath.Dir(cfg.AuditReport))
		}
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("-tls-cert and -tls-key go together")
	}
	kv, err := broker.ParseKafkaVersion(*kafkaVersion)
	if err != nil {
		return nil, fmt.Errorf("-kafka-version: %w", err)
	}
	cfg.KafkaVersion = kv
	r, ok := rules.ForProfile(cfg.Profile)
	if !ok {
		return nil, fmt.Errorf("unknown profile %q (want vast, kafka or audit)", cfg.Profile)
	}
	for _, d := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{
		{"initial-rebalance-delay", *rebal, &cfg.InitialRebalanceDelay},
		{"min-session-timeout", *minSession, &cfg.MinSessionTimeout},
		{"max-session-timeout", *maxSession, &cfg.MaxSessionTimeout},
		{"stale-end-offset", *stale, &r.StaleEndOffset},
		{"retention-check-interval", *retention, &cfg.RetentionCheckInterval},
		{"compaction-interval", *compaction, &cfg.CompactionInterval},
		{"idle-timeout", *idle, &cfg.IdleTimeout},
		{"producer-id-expiration", *producerExp, &cfg.ProducerIDExpiration},
		{"empty-fetch-delay", *emptyFetch, &cfg.EmptyFetchDelay},
		{"election-delay", *election, &cfg.ElectionDelay},
		{"consumer-session-timeout", *cgSession, &cfg.ConsumerSessionTimeout},
		{"consumer-heartbeat-interval", *cgInterval, &cfg.ConsumerHeartbeatInterval},
	} {
		if d.val == "" {
			continue
		}
		v, err := time.ParseDuration(d.val)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("-%s %q: want a duration such as 3s", d.name, d.val)
		}
		*d.dst = v
	}
	if *rebal == "" && cfg.Profile == "kafka" && !cfg.ManualClock {
		// The kafka profile is a broker with Kafka's defaults, as other
		// clients' test suites expect: librdkafka's static-membership test
		// counts on both its consumers joining the group's first generation.
		// Not on a manual clock, where the delay would hold every new group
		// until the test advanced the clock.
		cfg.InitialRebalanceDelay = kafkaInitialRebalanceDelay
	}
	for _, spec := range ruleFlags.all() {
		if err := setRule(&r, spec); err != nil {
			return nil, err
		}
	}
	cfg.Rules = r
	for _, spec := range gaps.all() {
		g, err := parseOffsetGap(spec)
		if err != nil {
			return nil, err
		}
		cfg.OffsetGaps = append(cfg.OffsetGaps, g)
	}
	for _, spec := range topics.all() {
		t, err := parseTopic(spec)
		if err != nil {
			return nil, err
		}
		cfg.Topics = append(cfg.Topics, t)
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		return nil, fmt.Errorf("-log-format %q: want text or json", cfg.LogFormat)
	}
	return cfg, nil
}

// applyConfigFile reads a JSON object whose keys are flag names and sets
// every flag not given on the command line. Types are strict: a boolean
// flag takes true or false, any other single-valued flag a string (a
// duration as "3s"), a repeatable flag a string or an array of strings, and
// "rule" also an object of rule names to a string, number, boolean or array
// of strings. Anything else, an unknown key, or a key given twice is an
// error naming the key.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("config file %s: "+format, append([]any{path}, a...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fail("want a JSON object whose keys are flag names")
	}
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail("%v", err)
		}
		key := t.(string) // object keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail("%q: %v", key, err)
		}
		f := fs.Lookup(key)
		if f == nil || key == "config" || commands[key] {
			return fail("unknown key %q (keys are flag names)", key)
		}
		if seen[key] {
			return fail("%q is given twice", key)
		}
		seen[key] = true
		vals, err := configValues(f, raw)
		if err != nil {
			return fail("%q: %v", key, err)
		}
		if l, ok := f.Value.(*listFlag); ok {
			for _, v := range vals {
				l.file = append(l.file, l.split(v)...)
			}
			continue
		}
		if onCmdLine[key] {
			continue
		}
		if err := f.Value.Set(vals[0]); err != nil {
			return fail("%q: %v", key, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("data after the JSON object")
	}
	return nil
}

// configValues checks a config file value against its flag's type and
// returns it as flag values: one for a single-valued flag, any number for a
// repeatable one. An integer flag also takes a JSON integer.
func configValues(f *flag.Flag, raw json.RawMessage) ([]string, error) {
	var str string
	var strs []string
	isString := json.Unmarshal(raw, &str) == nil
	_, repeatable := f.Value.(*listFlag)
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil || string(raw) == "null" {
			return nil, fmt.Errorf("want true or false, got %s", raw)
		}
		return []string{strconv.FormatBool(v)}, nil
	}
	if g, ok := f.Value.(flag.Getter); ok && !repeatable {
		switch g.Get().(type) {
		case int, int64, uint, uint64:
			var n int64
			if json.Unmarshal(raw, &n) == nil {
				return []string{strconv.FormatInt(n, 10)}, nil
			}
		}
	}
	switch {
	case isString && string(raw) != "null":
		return []string{str}, nil
	case !repeatable:
		return nil, fmt.Errorf("want a string, got %s", raw)
	case json.Unmarshal(raw, &strs) == nil && string(raw) != "null":
		return strs, nil
	case f.Name != "rule":
		return nil, fmt.Errorf("want a string or an array of strings, got %s", raw)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || string(raw) == "null" {
		return nil, fmt.Errorf(`want an object such as {"MaxGroups": 10}, an array of "Name=value" strings, or a string; got %s`, raw)
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	var vals []string
	for _, k := range names {
		var v any
		if err := json.Unmarshal(obj[k], &v); err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case string:
			vals = append(vals, k+"="+v)
		case bool:
			vals = append(vals, k+"="+strconv.FormatBool(v))
		case float64:
			vals = append(vals, k+"="+strconv.FormatFloat(v, 'f', -1, 64))
		case []any:
			var list []string
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("rule %s: want an array of strings, got %s", k, obj[k])
				}
				list = append(list, s)
			}
			vals = append(vals, k+"="+strings.Join(list, ","))
		default:
			return nil, fmt.Errorf("rule %s: want a string, number, boolean or array of strings, got %s", k, obj[k])
		}
	}
	return vals, nil
}
