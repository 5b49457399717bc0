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
	"log/slog"
	"net"
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

	// Security: SASL users, identity policies and TLS.
	Users       map[string]string
	Policies    []broker.Policy
	DefaultDeny bool
	View        string
	TLSCert     string
	TLSKey      string

	// Unknown are the VASTFAKE_ variables that set nothing, warned about
	// once the logger is there.
	Unknown []unknownVariable
	// sources says where each single-valued setting came from, and
	// topicItems which -topic item asked for each topic, for the errors
	// of a start that fails after parsing.
	sources    map[string]string
	topicItems map[string]item
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
// default to 1 and are at most maxPartitions. Its error says what is wanted.
func parseTopic(spec string, maxPartitions int) (broker.TopicSpec, error) {
	name, rest, _ := strings.Cut(spec, ":")
	parts, configs, _ := strings.Cut(rest, ":")
	t := broker.TopicSpec{Name: name, Partitions: 1}
	if name == "" {
		return t, errors.New("name[:partitions[:key=value,...]] with a name")
	}
	if parts != "" {
		n, err := strconv.ParseInt(parts, 10, 32)
		if err != nil || n <= 0 || n > int64(maxPartitions) {
			return t, fmt.Errorf("name[:partitions[:key=value,...]] with 1 to %d partitions", maxPartitions)
		}
		t.Partitions = int32(n)
	}
	for _, kv := range strings.Split(configs, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return t, fmt.Errorf("name[:partitions[:key=value,...]], and config %s is not key=value", clip(kv))
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
	bad := errors.New("topic:skip[:every] with skip and every whole numbers of 1 or more")
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
// any case; the value is parsed by the field's type: bool, int (0 to
// 2147483647, Kafka's INT), a Go duration ("30s": 0, or 1ms or more) or a
// comma-separated list of strings. For a rule the value may also be a
// mode: "enforce", "audit" or "off" (see rules.Rules.SetMode); a plain
// value leaves the rule's mode as the profile set it. Its error says what
// is wanted.
func setRule(r *rules.Rules, spec string) error {
	name, val, ok := strings.Cut(spec, "=")
	if !ok {
		return errors.New("Name=value, a rule's name and its value or mode (enforce, audit, off)")
	}
	name, val = strings.TrimSpace(name), strings.TrimSpace(val)
	for _, id := range rules.IDs() {
		if !strings.EqualFold(id.String(), name) {
			continue
		}
		switch strings.ToLower(val) {
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
		if strings.EqualFold(v.Type().Field(i).Name, name) {
			f = v.Field(i)
			name = v.Type().Field(i).Name
		}
	}
	if !f.IsValid() {
		return fmt.Errorf("Name=value with the name of a rule, such as %s (the nearest to %s)", nearest(name, ruleNames()), clip(name))
	}
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		d, err := time.ParseDuration(val)
		if err != nil || d < 0 || d > 0 && d < minInterval {
			return fmt.Errorf("%s=0 or %s=<a duration of 1ms or more, such as 30s>", name, name)
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return fmt.Errorf("%s=true, false, enforce, audit or off", name)
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int:
		// A negative limit would silently mean no limit: 0 says that.
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 || n > maxInt32 {
			return fmt.Errorf("%s=<a whole number from 0 to %d> (0 means no limit or the default)", name, maxInt32)
		}
		f.SetInt(n)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		var list []string
		for _, s := range strings.Split(val, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		f.Set(reflect.ValueOf(list))
	default:
		return fmt.Errorf("a rule the command line can set: %s cannot be", name)
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

// maxFlagLine bounds the lines the flag package prints about a mistake,
// which quote the argument whole.
const maxFlagLine = 200

// newFlagSet defines every flag of the binary on a new flag set, each a
// *value or a *listFlag holding its default.
func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("vastfake", flag.ContinueOnError)
	fs.Usage = func() {} // printed by parseConfig, where it belongs: stdout for -h, stderr for a mistake
	def := func(name, text string, k kind, help string) *value {
		v := &value{name: name, kind: k, text: text}
		fs.Var(v, name, help+" (env "+envName(name)+")")
		return v
	}
	num := func(name string, text string, min, max int64, help string) {
		v := def(name, text, kindInt, help)
		v.min, v.max = min, max
	}
	dur := func(name string, zeroOK bool, help string) {
		def(name, "", kindDuration, help+"; a Go duration such as 3s").zeroOK = zeroOK
	}
	address := func(name, text string, minPort int64, help string) {
		v := def(name, text, kindAddress, help)
		v.min, v.max = minPort, 65535
	}
	list := func(name string, split func(string) []string, help string) {
		l := listNames[name]
		fs.Var(&listFlag{name: name, split: split}, name, help+", repeatable (env "+l[0]+" or "+l[1]+", comma-separated)")
	}
	address("listen", "127.0.0.1:9092", 0, "address to listen on; port 0 picks a free one")
	def("advertise", "", kindText, "host:port clients are told to connect to, or with -brokers one per broker, comma-separated; ports 1 to 65535; default the listen addresses")
	num("brokers", "1", 1, broker.MaxBrokers, fmt.Sprintf("broker ids, each with its own listener, listed in Metadata: the first on -listen, the others on the ports after it (all picked by the system when its port is 0); 1 to %d", broker.MaxBrokers))
	def("profile", "vast", kindText, "rules to apply: vast (enforce every VAST rule), kafka (none) or audit (behave as Kafka and report what VAST would refuse or do differently)")
	def("kafka-version", broker.DefaultKafkaVersion.String(), kindText, "Kafka release whose semantics the kafka and audit profiles follow where 4.x releases differ: 4.0 (transactions v1, KIP-848 commits at the member's exact epoch), 4.1 (transactions v2), 4.2 (share groups), 4.3 (KIP-1251 assignment epochs); ApiVersions follows it")
	def("audit-report", "", kindText, "at exit, write the findings of audited rules to FILE.md and FILE.json (or only FILE, when it ends in .md or .json)")
	dur("initial-rebalance-delay", true, "group.initial.rebalance.delay.ms: how long a new group waits for more members; default 0, and Kafka's 3s with -profile kafka (but not with -manual-clock, where it would hold every new group until the clock is advanced)")
	dur("min-session-timeout", true, "group.min.session.timeout.ms: a JoinGroup with a shorter session timeout gets INVALID_SESSION_TIMEOUT; default 6s as in Kafka, 0 for no bound")
	dur("max-session-timeout", true, "group.max.session.timeout.ms: a JoinGroup with a longer session timeout gets INVALID_SESSION_TIMEOUT; default 30m as in Kafka, 0 for no bound")
	dur("stale-end-offset", true, "make ListOffsets(latest) trail writes by this long (the StaleEndOffset rule); default 0, off")
	num("num-partitions", strconv.Itoa(broker.DefaultPartitions), 1, broker.MaxPartitionsPerRequest, fmt.Sprintf("num.partitions: partitions of a topic auto-created (kafka profile) or created with -1 partitions; 1 to %d, what one CreateTopics may create", broker.MaxPartitionsPerRequest))
	num("offset-metadata-max-bytes", strconv.Itoa(coordinator.DefaultOffsetMetadataMaxBytes), 0, maxInt32, "offset.metadata.max.bytes: an OffsetCommit partition with longer metadata gets OFFSET_METADATA_TOO_LARGE; 0 allows only empty metadata")
	dur("retention-check-interval", true, "how often retention.ms and retention.bytes are applied, on the broker's clock; default 1s, 0 for never")
	dur("compaction-interval", true, "how often topics with cleanup.policy=compact are compacted, on the broker's clock, when min.cleanable.dirty.ratio calls for it; default 0, off (POST /topics/{name}/compact compacts on demand)")
	dur("idle-timeout", true, "close a connection that sends no request for this long (connections.max.idle.ms); default 10m, 0 never")
	dur("producer-id-expiration", true, "producer.id.expiration.ms: forget an idempotent producer that has not written to a partition for this long, on the broker's clock (kafka profile); default 24h, 0 never")
	dur("empty-fetch-delay", true, "vast profile: answer a fetch that finds no records after this long (or half its fetch.wait.max.ms if shorter), standing in for a network round trip; new records end it at once; default 20ms, 0 answers at once")
	dur("consumer-session-timeout", false, "group.consumer.session.timeout.ms: a KIP-848 consumer group member that sends no heartbeat for this long is fenced and its partitions move, on the broker's clock (kafka and audit profiles); default 45s")
	dur("consumer-heartbeat-interval", false, "group.consumer.heartbeat.interval.ms: how often KIP-848 consumer group members are told to heartbeat; shorter than -consumer-session-timeout; default 5s")
	dur("election-delay", true, "kafka profile with several brokers: how long a broker taken down (POST /brokers/{id}/down) keeps leading its partitions before it is fenced and their next in-sync replicas lead, on the broker's clock; default 9s (broker.session.timeout.ms), 0 elects at once")
	num("default-replication-factor", "0", 0, broker.MaxBrokers, "default.replication.factor: replicas of a topic created without a replication factor (kafka profile with several brokers); default 0, which is 3 capped at the broker count")
	def("manual-clock", "false", kindBool, "run the broker on a clock that moves only when POST /clock/advance moves it, from the wall time at start")
	def("fetch-detail", "false", kindBool, "keep, in the request log (GET /requests), what each partition of every Fetch returned: fetch offset, records and bytes, high watermark, error; for a consumer that reads nothing; costs memory")
	def("exit-on-stdin-close", "false", kindBool, "close the broker when stdin reaches end of file, so that it dies with the launcher holding the other end of the pipe, however that ends")
	address("http", "", 0, "host:port of the HTTP control plane and live page; off unless set")
	def("http-token", "", kindText, "token the control plane requires (Authorization: Bearer <token>, or ?token=); with -user and no token, one is generated and printed on stdout")
	def("http-allow-hosts", "", kindText, "comma-separated host names the control plane answers besides localhost and IP addresses (DNS rebinding protection); * allows any")
	def("ready-file", "", kindText, "file to write the bootstrap address to once the broker accepts connections")
	def("log-level", "info", kindText, "debug (every request), info (every refusal with its VAST rule), warn or error")
	def("log-format", "text", kindText, "text or json")
	def("config", "", kindFile, "JSON file whose keys are flag names, e.g. {\"topic\": [\"orders:3\"], \"rule\": [\"MaxGroups=10\"]}; at most 1 MiB")
	list("topic", splitTopics, "topic to create at start: name[:partitions[:key=value,...]]")
	list("offset-gap", splitPlain, "leave unused offsets in a topic's partitions, as compaction would: topic:skip[:every] skips skip offsets once every records (default 1) were appended since the last gap")
	list("rule", splitRules, "override one rule of the profile: Field=value with a rules.Rules field name, or Field=enforce|audit|off")
	list("user", splitPlain, "SASL user name:password (PLAIN, and SCRAM-SHA-256/512 in the kafka and audit profiles), at most 1000; any user makes the listener require SASL")
	list("policy", splitPlain, "identity policy \"allow|deny user action resource\", e.g. \"deny app KafkaWrite vast:kafka:topic:vastfake:audit\"")
	def("default-deny", "false", kindBool, "deny a request no policy matches; VAST allows it")
	def("view", broker.DefaultView, kindText, fmt.Sprintf("view name in policy resource names, vast:kafka:topic:<view>:<topic>; at most %d bytes", broker.MaxStartName)).maxBytes = broker.MaxStartName
	def("tls-cert", "", kindFile, "PEM certificate file: the listener then speaks TLS only (with -tls-key); at most 1 MiB")
	def("tls-key", "", kindFile, "PEM private key file of -tls-cert; at most 1 MiB")
	for name, help := range map[string]string{
		"version":     "print the version and exit",
		"healthcheck": "check that the control plane at the -http address (set by flag, environment or config file) answers GET /healthz, and exit 0 if it does, 1 if not: a container's health check, for an image with no shell or curl",
	} {
		fs.Var(&value{name: name, kind: kindBool, text: "false"}, name, help)
	}
	return fs
}

// parseConfig merges the environment, the config file and args into a
// config. -h and -help print the usage on stdout and -version the version,
// and both return errDone; a flag error prints with the usage to stderr and
// returns a *flagError. Any other error names the flag, its environment
// variable and what is wanted.
func parseConfig(args []string, stdout, stderr io.Writer) (*config, error) {
	fs := newFlagSet()
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "Usage: vastfake [flags]\n\nvastfake runs an in-memory Kafka broker that behaves like VAST Event Broker 5.5.\n\nFlags:")
		printUsage(w, fs)
	}
	get := func(name string) *value { return fs.Lookup(name).Value.(*value) }
	items := func(name string) *listFlag { return fs.Lookup(name).Value.(*listFlag) }

	// The environment changes the defaults.
	unknown := readEnvironment(fs, os.Environ())
	fs.SetOutput(&clipWriter{w: stderr, maxLine: maxFlagLine})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout) // asked for, the usage is the answer: stdout, exit 0
			return nil, errDone
		}
		usage(stderr) // after the flag package's own line naming the mistake
		return nil, &flagError{err}
	}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := f.Value.(*value); ok {
			v.from = fromCommandLine
		}
	})
	for _, name := range []string{"version", "healthcheck"} {
		v := get(name)
		on, err := v.checkBool()
		if err != nil {
			return nil, err
		}
		switch {
		case !on:
		case name == "version":
			fmt.Fprintln(stdout, versionLine())
			return nil, errDone
		default:
			addr, err := get("http").checkAddress()
			if err != nil {
				return nil, err
			}
			if err := checkHealth(addr); err != nil {
				return nil, &unhealthyError{err}
			}
			return nil, errDone
		}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %s: every setting is a flag (vastfake -h lists them)", clip(fs.Arg(0)))
	}
	if configFile := get("config"); configFile.text != "" {
		data, err := configFile.checkFile()
		if err != nil {
			return nil, err
		}
		if err := applyConfigFile(fs, configFile.text, data); err != nil {
			return nil, err
		}
	}

	cfg := &config{
		Unknown:                   unknown,
		sources:                   map[string]string{},
		topicItems:                map[string]item{},
		IdleTimeout:               broker.DefaultIdleTimeout,
		RetentionCheckInterval:    broker.DefaultRetentionCheckInterval,
		ProducerIDExpiration:      broker.DefaultProducerIDExpiration,
		ConsumerSessionTimeout:    coordinator.DefaultConsumerSessionTimeout,
		ConsumerHeartbeatInterval: coordinator.DefaultConsumerHeartbeatInterval,
		EmptyFetchDelay:           broker.DefaultEmptyFetchDelay,
		MinSessionTimeout:         coordinator.DefaultMinSessionTimeout,
		MaxSessionTimeout:         coordinator.DefaultMaxSessionTimeout,
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := f.Value.(*value); ok {
			cfg.sources[f.Name] = v.source()
		}
	})
	for _, s := range []struct {
		name string
		dst  *string
	}{
		{"profile", &cfg.Profile}, {"audit-report", &cfg.AuditReport}, {"http-token", &cfg.HTTPToken},
		{"ready-file", &cfg.ReadyFile}, {"log-level", &cfg.LogLevel}, {"log-format", &cfg.LogFormat},
		{"view", &cfg.View}, {"advertise", &cfg.Advertise},
	} {
		if *s.dst, err = get(s.name).checkText(); err != nil {
			return nil, err
		}
	}
	allowHosts, err := get("http-allow-hosts").checkText()
	if err != nil {
		return nil, err
	}
	cfg.HTTPAllowHosts = splitPlain(allowHosts)
	for _, s := range []struct {
		name string
		dst  *string
	}{{"listen", &cfg.Listen}, {"http", &cfg.HTTP}} {
		if *s.dst, err = get(s.name).checkAddress(); err != nil {
			return nil, err
		}
	}
	for _, s := range []struct {
		name string
		dst  *string
	}{{"tls-cert", &cfg.TLSCert}, {"tls-key", &cfg.TLSKey}} {
		v := get(s.name)
		if len(v.text) > maxValueBytes {
			return nil, v.wrong(fmt.Sprintf("a path of at most %d bytes", maxValueBytes))
		}
		*s.dst = v.text // read at start, bounded (loadKeyPair)
	}
	for _, s := range []struct {
		name string
		dst  *bool
	}{
		{"manual-clock", &cfg.ManualClock}, {"fetch-detail", &cfg.FetchDetail},
		{"exit-on-stdin-close", &cfg.ExitOnStdinClose}, {"default-deny", &cfg.DefaultDeny},
	} {
		if *s.dst, err = get(s.name).checkBool(); err != nil {
			return nil, err
		}
	}
	ints := map[string]int64{}
	for _, name := range []string{"brokers", "num-partitions", "offset-metadata-max-bytes", "default-replication-factor"} {
		if ints[name], err = get(name).checkInt(); err != nil {
			return nil, err
		}
	}
	cfg.Brokers = int(ints["brokers"])
	cfg.NumPartitions = int32(ints["num-partitions"])
	cfg.OffsetMetadataMaxBytes = int(ints["offset-metadata-max-bytes"])
	cfg.DefaultReplicationFactor = int(ints["default-replication-factor"])
	if _, port, err := net.SplitHostPort(cfg.Listen); err == nil {
		if p, _ := strconv.Atoi(port); p != 0 && p+cfg.Brokers-1 > 65535 {
			return nil, get("listen").wrong(fmt.Sprintf("a port of at most %d for %d brokers on consecutive ports, or port 0", 65535-cfg.Brokers+1, cfg.Brokers))
		}
	}
	if cfg.Advertise != "" {
		adv := get("advertise")
		addrs := strings.Split(cfg.Advertise, ",")
		if len(addrs) != cfg.Brokers {
			return nil, adv.wrong(fmt.Sprintf("one host:port per broker, comma-separated: %d for -brokers %d", cfg.Brokers, cfg.Brokers))
		}
		for _, a := range addrs {
			if err := checkHostPort(a, 1, 65535, true); err != nil {
				return nil, adv.wrong(err.Error() + ", as PUT /advertise takes")
			}
		}
	}
	if cfg.AuditReport != "" {
		// Checked at start: at exit the report could only be lost.
		if fi, err := os.Stat(filepath.Dir(cfg.AuditReport)); err != nil || !fi.IsDir() {
			return nil, get("audit-report").wrong("a file in a directory that exists (" + clip(filepath.Dir(cfg.AuditReport)) + " does not exist)")
		}
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("-tls-cert (VASTFAKE_TLS_CERT) and -tls-key (VASTFAKE_TLS_KEY) go together: want both or neither")
	}
	kafkaVersion, err := get("kafka-version").checkText()
	if err != nil {
		return nil, err
	}
	if cfg.KafkaVersion, err = broker.ParseKafkaVersion(kafkaVersion); err != nil {
		var names []string
		for _, v := range broker.KafkaVersions() {
			names = append(names, v.String())
		}
		return nil, get("kafka-version").wrong("one of " + strings.Join(names, ", "))
	}
	r, ok := rules.ForProfile(cfg.Profile)
	if !ok {
		return nil, get("profile").wrong("vast, kafka or audit")
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{"initial-rebalance-delay", &cfg.InitialRebalanceDelay},
		{"min-session-timeout", &cfg.MinSessionTimeout},
		{"max-session-timeout", &cfg.MaxSessionTimeout},
		{"stale-end-offset", &r.StaleEndOffset},
		{"retention-check-interval", &cfg.RetentionCheckInterval},
		{"compaction-interval", &cfg.CompactionInterval},
		{"idle-timeout", &cfg.IdleTimeout},
		{"producer-id-expiration", &cfg.ProducerIDExpiration},
		{"empty-fetch-delay", &cfg.EmptyFetchDelay},
		{"election-delay", &cfg.ElectionDelay},
		{"consumer-session-timeout", &cfg.ConsumerSessionTimeout},
		{"consumer-heartbeat-interval", &cfg.ConsumerHeartbeatInterval},
	} {
		v := get(d.name)
		dd, err := v.checkDuration()
		if err != nil {
			return nil, err
		}
		if v.text != "" {
			*d.dst = dd
		}
	}
	cfg.ElectionDelaySet = get("election-delay").text != ""
	if get("initial-rebalance-delay").text == "" && cfg.Profile == "kafka" && !cfg.ManualClock {
		// The kafka profile is a broker with Kafka's defaults, as other
		// clients' test suites expect: librdkafka's static-membership test
		// counts on both its consumers joining the group's first generation.
		// Not on a manual clock, where the delay would hold every new group
		// until the test advanced the clock.
		cfg.InitialRebalanceDelay = kafkaInitialRebalanceDelay
	}
	if cfg.ConsumerHeartbeatInterval >= cfg.ConsumerSessionTimeout {
		v := get("consumer-heartbeat-interval")
		return nil, wrong(v.name, cfg.ConsumerHeartbeatInterval.String(), v.source(), "a duration shorter than -consumer-session-timeout ("+cfg.ConsumerSessionTimeout.String()+")")
	}
	if cfg.MinSessionTimeout > 0 && cfg.MaxSessionTimeout > 0 && cfg.MinSessionTimeout > cfg.MaxSessionTimeout {
		v := get("min-session-timeout")
		return nil, wrong(v.name, cfg.MinSessionTimeout.String(), v.source(), "a duration no longer than -max-session-timeout ("+cfg.MaxSessionTimeout.String()+")")
	}

	ruleItems, err := items("rule").check()
	if err != nil {
		return nil, err
	}
	for _, it := range ruleItems {
		if err := setRule(&r, it.text); err != nil {
			return nil, wrong("rule", it.text, it.from, err.Error())
		}
	}
	cfg.Rules = r
	userItems, err := items("user").check()
	if err != nil {
		return nil, err
	}
	for _, it := range userItems {
		name, pass, ok := strings.Cut(it.text, ":")
		if !ok || name == "" || pass == "" {
			return nil, wrong("user", it.text, it.from, "name:password")
		}
		if cfg.Users == nil {
			cfg.Users = map[string]string{}
		}
		cfg.Users[name] = pass
		if len(cfg.Users) > broker.MaxUsers {
			return nil, wrong("user", it.text, it.from, fmt.Sprintf("at most %d users", broker.MaxUsers))
		}
	}
	policyItems, err := items("policy").check()
	if err != nil {
		return nil, err
	}
	for _, it := range policyItems {
		p, err := broker.ParsePolicy(it.text)
		if err != nil {
			want := `"allow|deny user action resource"`
			var pe *broker.PolicyError
			if errors.As(err, &pe) {
				want += ", and " + pe.Problem
			}
			return nil, wrong("policy", it.text, it.from, want)
		}
		cfg.Policies = append(cfg.Policies, p)
	}
	gapItems, err := items("offset-gap").check()
	if err != nil {
		return nil, err
	}
	for _, it := range gapItems {
		g, err := parseOffsetGap(it.text)
		if err != nil {
			return nil, wrong("offset-gap", it.text, it.from, err.Error())
		}
		cfg.OffsetGaps = append(cfg.OffsetGaps, g)
	}
	topicItems, err := items("topic").check()
	if err != nil {
		return nil, err
	}
	// The topics created at start are created as one CreateTopics request
	// would be: at most broker.MaxPartitionsPerRequest partitions in all,
	// or where VAST's view limit is enforced, VAST's limits per topic and
	// per view.
	perTopic, total, all := broker.MaxPartitionsPerRequest, broker.MaxPartitionsPerRequest, "what one CreateTopics may create"
	if r.Mode(rules.MaxPartitionsPerView) == rules.Enforce {
		total, all = r.MaxPartitionsPerView, "VAST's limit per view"
		perTopic = maxInt32
		if r.Mode(rules.MaxPartitionsPerTopic) == rules.Enforce {
			perTopic = r.MaxPartitionsPerTopic
		}
	}
	sum := 0
	for _, it := range topicItems {
		t, err := parseTopic(it.text, perTopic)
		if err != nil {
			return nil, wrong("topic", it.text, it.from, err.Error())
		}
		if sum += int(t.Partitions); sum > total {
			return nil, wrong("topic", it.text, it.from, fmt.Sprintf("topics of at most %d partitions in all, %s", total, all))
		}
		cfg.Topics = append(cfg.Topics, t)
		cfg.topicItems[t.Name] = it
	}
	switch cfg.LogFormat {
	case "text", "json":
	default:
		return nil, get("log-format").wrong("text or json")
	}
	var level slog.Level
	if level.UnmarshalText([]byte(cfg.LogLevel)) != nil {
		return nil, get("log-level").wrong("debug, info, warn or error")
	}
	return cfg, nil
}

// applyConfigFile reads data, the JSON object of the config file at path,
// whose keys are flag names, and sets every flag not given on the command
// line. Types are strict: a boolean flag takes true or false, an integer
// flag a number or a string, any other single-valued flag a string (a
// duration as "3s"), a repeatable flag a string or an array of strings, and
// "rule" also an object of rule names to a string, number, boolean or array
// of strings. Anything else, an unknown key, or a key given twice is an
// error naming the key.
func applyConfigFile(fs *flag.FlagSet, path string, data []byte) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("-config (VASTFAKE_CONFIG) file %s: "+format, append([]any{clip(path)}, a...)...)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fail("want a JSON object whose keys are flag names")
	}
	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	seen := map[string]bool{}
	source := fromFile(path)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fail("want a JSON object (%v)", err)
		}
		key := t.(string) // object keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fail("%s: want a JSON value (%v)", clip(key), err)
		}
		f := fs.Lookup(key)
		if f == nil || key == "config" || commands[key] {
			return fail("unknown key %s: want a flag name, such as %s", clip(key), nearestFlag(fs, key))
		}
		if seen[key] {
			return fail("%q is given twice: want each key once", key)
		}
		seen[key] = true
		vals, err := configValues(f, raw)
		if err != nil {
			return fail("%q, that is %s: %v", key, flagAndEnv(key), err)
		}
		if l, ok := f.Value.(*listFlag); ok {
			for _, v := range vals {
				l.file = append(l.file, l.items(v, source)...)
			}
			continue
		}
		if onCmdLine[key] {
			continue
		}
		v := f.Value.(*value)
		v.text, v.from = vals[0], source
	}
	if _, err := dec.Token(); err != nil {
		return fail("want a JSON object (%v)", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("want nothing after the JSON object")
	}
	return nil
}

// nearestFlag returns the flag of fs nearest to name.
func nearestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !commands[f.Name] && f.Name != "config" {
			names = append(names, f.Name)
		}
	})
	return strconv.Quote(nearest(name, names))
}

// configValues checks a config file value against its flag's type and
// returns it as flag values: one for a single-valued flag, any number for a
// repeatable one. An integer flag also takes a JSON integer.
func configValues(f *flag.Flag, raw json.RawMessage) ([]string, error) {
	var str string
	var strs []string
	isString := json.Unmarshal(raw, &str) == nil
	v, single := f.Value.(*value)
	if single && v.kind == kindBool {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil || string(raw) == "null" {
			return nil, fmt.Errorf("want true or false, got %s", clip(string(raw)))
		}
		return []string{strconv.FormatBool(b)}, nil
	}
	if single && v.kind == kindInt {
		var n int64
		if json.Unmarshal(raw, &n) == nil {
			return []string{strconv.FormatInt(n, 10)}, nil
		}
	}
	switch {
	case isString && string(raw) != "null":
		return []string{str}, nil
	case single && v.kind == kindInt:
		return nil, fmt.Errorf("want a whole number, got %s", clip(string(raw)))
	case single:
		return nil, fmt.Errorf("want a string, got %s", clip(string(raw)))
	case json.Unmarshal(raw, &strs) == nil && string(raw) != "null":
		return strs, nil
	case f.Name != "rule":
		return nil, fmt.Errorf("want a string or an array of strings, got %s", clip(string(raw)))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || string(raw) == "null" {
		return nil, fmt.Errorf(`want an object such as {"MaxGroups": 10}, an array of "Name=value" strings, or a string; got %s`, clip(string(raw)))
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
					return nil, fmt.Errorf("rule %s: want an array of strings, got %s", clip(k), clip(string(obj[k])))
				}
				list = append(list, s)
			}
			vals = append(vals, k+"="+strings.Join(list, ","))
		default:
			return nil, fmt.Errorf("rule %s: want a string, number, boolean or array of strings, got %s", clip(k), clip(string(obj[k])))
		}
	}
	return vals, nil
}
