// Command vastfake runs an in-memory Kafka broker that behaves like VAST
// Event Broker 5.5, for developing and testing apps in any language.
//
//	go run ./cmd/vastfake                      # VAST profile on 127.0.0.1:9092
//	go run ./cmd/vastfake -listen 127.0.0.1:0 -topic orders:3 -profile kafka
//	go run ./cmd/vastfake -topic orders:3:retention.ms=60000 -rule MaxGroups=10 -http 127.0.0.1:8080
//	go run ./cmd/vastfake -topic prices:1:cleanup.policy=compact -compaction-interval 30s -offset-gap orders:5:100
//
// The first line on stdout is the bootstrap address ("listening on
// host:port"); with -http the second is "control plane on
// http://host:port/", and when -user is given without -http-token a third
// gives the token generated for the control plane ("control plane token
// <token>"; send it as "Authorization: Bearer <token>" or open the page at
// http://host:port/?token=<token>). Every flag can also be set by the environment variable named
// in its help, or by the JSON file named by -config (see config.go for the
// precedence). SIGINT or SIGTERM closes the broker, and so does the end of
// stdin with -exit-on-stdin-close (for launchers whose child must die with
// them).
package main

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/vastfake/vastfake/broker"
	"github.com/vastfake/vastfake/clock"
)

func main() {
	reserveHeap()
	os.Exit(exitCode(run(os.Args[1:], os.Stdout, os.Stderr, nil), os.Stderr))
}

// exitCode prints err's line on stderr, unless the flag package did, and
// returns the exit code for it: 0 for none, 1 for a failed -healthcheck
// (a container's unhealthy), 2 for anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var fe *flagError
	if !errors.As(err, &fe) { // the flag package printed those already
		fmt.Fprintln(stderr, errorLine(err))
	}
	var ue *unhealthyError
	if errors.As(err, &ue) {
		return 1
	}
	return 2
}

// heapReserve is heap the binary allocates at start and never touches, so
// that after one collection as it is allocated the garbage collector next
// runs once the heap has grown to about twice as much (GOGC's 100%: the
// reserve counts as live), instead of at 4, 8, 16 and 32 MB. A broker storing records allocates mostly the
// records, which stay live, so those early collections free almost
// nothing: storing the first 100,000 records of 100 bytes took 14-21% less
// CPU with the reserve. It costs no resident memory (the pages are
// never touched), but lets up to about that much garbage wait for a
// collection.
const heapReserve = 32 << 20

// reserved holds the heap reserve for the life of the process.
var reserved []byte

// reserveHeap allocates the heap reserve, unless the environment sets
// GOGC or GOMEMLIMIT: then the garbage collector is the user's to tune.
func reserveHeap() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	reserved = make([]byte, heapReserve)
}

// maxErrorLine bounds the line main prints for an error: the errors of
// the binary quote a short prefix of a value, and this keeps any other
// from echoing a whole one.
const maxErrorLine = 1024

// errorLine is the line main prints for err: prefixed "vastfake: " once,
// whether or not the error (the broker's do) already starts with it, and
// at most maxErrorLine bytes.
func errorLine(err error) string {
	msg := err.Error()
	if !strings.HasPrefix(msg, "vastfake: ") {
		msg = "vastfake: " + msg
	}
	if len(msg) > maxErrorLine {
		n := maxErrorLine
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n] + fmt.Sprintf("… (%d bytes)", len(msg))
	}
	return msg
}

// startError names the setting behind an error of broker.New: the -topic
// item of a topic it could not create, or the -listen address it could not
// listen on.
func startError(cfg *config, err error) error {
	var te *broker.TopicError
	if errors.As(err, &te) {
		if it, ok := cfg.topicItems[te.Topic]; ok {
			why := te.Code
			if te.Message != "" {
				why += ": " + te.Message
			}
			return wrong("topic", it.text, it.from, "a topic the broker can create ("+why+")")
		}
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "listen" {
		return wrong("listen", cfg.Listen, cfg.sources["listen"], "an address free to listen on ("+shortError(oe.Err)+")")
	}
	return err
}

// loadKeyPair reads -tls-cert and -tls-key, each at most maxFileBytes.
func loadKeyPair(cfg *config) (tls.Certificate, error) {
	var pems [2][]byte
	for i, f := range []struct{ name, path string }{{"tls-cert", cfg.TLSCert}, {"tls-key", cfg.TLSKey}} {
		data, err := readBounded(f.path)
		if err != nil {
			return tls.Certificate{}, wrong(f.name, f.path, cfg.sources[f.name], "a readable PEM file of at most 1 MiB ("+shortError(err)+")")
		}
		pems[i] = data
	}
	cert, err := tls.X509KeyPair(pems[0], pems[1])
	if err != nil {
		return tls.Certificate{}, wrong("tls-cert", cfg.TLSCert, cfg.sources["tls-cert"], "a PEM certificate that -tls-key (VASTFAKE_TLS_KEY) is the key of ("+clipError(err)+")")
	}
	return cert, nil
}

// clipError is err's message, or its first 200 bytes.
func clipError(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n] + "…"
	}
	return msg
}

// controlURL is the URL of the control plane bound to addr: on every
// interface (0.0.0.0, ::, or no host), it is reached at localhost.
func controlURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// imageVersion and imageRevision are the container image's version and
// VCS revision, which cmd/vastimage sets with go build -ldflags -X.
var imageVersion, imageRevision string

// versionLine is what -version prints: the module version (or "(devel)"
// for a build from a checkout, or the image's version), the VCS revision
// when the build recorded one, and the Go version.
func versionLine() string {
	version, goVersion, revision := "(devel)", runtime.Version(), imageRevision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if imageVersion != "" {
		version = imageVersion
	}
	line := "vastfake " + version
	if revision != "" && (version == "(devel)" || version == imageVersion) {
		line += " revision " + revision
	}
	return line + " " + goVersion
}

// run parses the configuration, starts the broker and the -http control
// plane, writes the ready file, prints the bootstrap address (and the
// control plane's on a second line, and a generated token on a third) and
// serves until a signal arrives or
// stop is closed (tests use stop).
func run(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	cfg, err := parseConfig(args, stdout, stderr)
	if errors.Is(err, errDone) {
		return nil // -h or -version answered
	}
	if err != nil {
		return err
	}
	logger, err := newLogger(cfg, stderr)
	if err != nil {
		return err
	}
	var clk clock.Clock = clock.Real{}
	if cfg.ManualClock {
		clk = clock.NewManual(time.Now())
	}
	opts := []broker.Option{
		broker.WithListen(cfg.Listen),
		broker.WithBrokers(cfg.Brokers),
		advertiseOption(cfg.Advertise),
		broker.WithRules(cfg.Rules),
		broker.WithKafkaVersion(cfg.KafkaVersion),
		broker.WithTopics(cfg.Topics...),
		broker.WithInitialRebalanceDelay(cfg.InitialRebalanceDelay),
		broker.WithDefaultPartitions(cfg.NumPartitions),
		broker.WithOffsetMetadataMaxBytes(cfg.OffsetMetadataMaxBytes),
		broker.WithMinSessionTimeout(cfg.MinSessionTimeout),
		broker.WithMaxSessionTimeout(cfg.MaxSessionTimeout),
		broker.WithClock(clk),
		broker.WithLogger(logger),
		broker.WithIdleTimeout(cfg.IdleTimeout),
		broker.WithProducerIDExpiration(cfg.ProducerIDExpiration),
		broker.WithConsumerGroupTimeouts(cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval),
		broker.WithEmptyFetchDelay(cfg.EmptyFetchDelay), broker.WithFetchDetail(cfg.FetchDetail),
		broker.WithDefaultReplicationFactor(int16(cfg.DefaultReplicationFactor)),
	}
	if cfg.ElectionDelaySet {
		opts = append(opts, broker.WithElectionDelay(cfg.ElectionDelay))
	}
	opts = append(opts, broker.WithRetentionCheckInterval(cfg.RetentionCheckInterval), broker.WithCompactionInterval(cfg.CompactionInterval), broker.WithOffsetGaps(cfg.OffsetGaps...))
	opts = append(opts, broker.WithUsers(cfg.Users), broker.WithPolicies(cfg.Policies...),
		broker.WithDefaultDeny(cfg.DefaultDeny), broker.WithView(cfg.View))
	if cfg.TLSCert != "" {
		cert, err := loadKeyPair(cfg)
		if err != nil {
			return err
		}
		opts = append(opts, broker.WithTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	}
	for _, u := range cfg.Unknown {
		attrs := []any{"variable", u.name}
		if u.nearest != "" {
			attrs = append(attrs, "did_you_mean", u.nearest)
		}
		logger.Warn("an environment variable sets nothing: vastfake -h lists every variable", attrs...)
	}
	b, err := broker.New(opts...)
	if err != nil {
		return startError(cfg, err)
	}
	defer b.Close()
	httpAddr, generatedToken := "", ""
	if cfg.HTTP != "" {
		token := cfg.HTTPToken
		if token == "" && len(cfg.Users) > 0 {
			// The broker holds users' records: the control plane that
			// serves them needs a token too.
			token = rand.Text()
			generatedToken = token
		}
		addr, stopHTTP, err := serveControl(b, cfg.HTTP, token, cfg.HTTPAllowHosts, logger)
		if err != nil {
			return wrong("http", cfg.HTTP, cfg.sources["http"], "an address free to listen on ("+shortError(err)+")")
		}
		defer stopHTTP()
		httpAddr = addr
	}
	if cfg.ReadyFile != "" {
		if err := writeReadyFile(cfg.ReadyFile, b.AdvertisedAddr()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "listening on %s\n", b.AdvertisedAddr())
	if httpAddr != "" {
		fmt.Fprintf(stdout, "control plane on %s\n", controlURL(httpAddr))
	}
	if generatedToken != "" {
		fmt.Fprintf(stdout, "control plane token %s\n", generatedToken)
	}
	// Each listener is named as GET /brokers names it: the address it is
	// bound to (the host asked for, the port it got) beside the one
	// clients are told.
	logger.Info("vastfake started", "brokers", len(b.BrokerIDs()), "profile", cfg.Profile, "kafka_version", cfg.KafkaVersion.String(),
		"topics", len(cfg.Topics), "manual_clock", cfg.ManualClock,
		"sasl_users", len(cfg.Users), "policies", len(cfg.Policies), "tls", cfg.TLSCert != "")
	advertised := b.Advertised()
	for i, id := range b.BrokerIDs() {
		logger.Info("kafka listener", "broker", id, "bound", b.BrokerAddr(id), "advertised", advertised[i])
	}
	if httpAddr != "" {
		logger.Info("control plane listener", "bound", httpAddr, "url", controlURL(httpAddr))
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	var stdinClosed <-chan struct{} // nil, never ready, unless -exit-on-stdin-close
	if cfg.ExitOnStdinClose {
		stdinClosed = watchEOF(stdin)
	}
	select {
	case s := <-sig:
		logger.Info("closing", "signal", s.String())
	case <-stdinClosed:
		logger.Info("closing", "reason", "stdin closed")
	case <-stop:
	}
	b.Close()
	return writeAuditReport(b, cfg.AuditReport, stdout)
}

// writeAuditReport prints the findings of audited rules on stdout as
// Markdown, and writes them to the -audit-report file(s): path.md and
// path.json, or only path when it ends in .md or .json. It does nothing
// when no rule is audited and no file is asked for.
func writeAuditReport(b *broker.Broker, path string, stdout io.Writer) error {
	if !b.Audited() && path == "" {
		return nil
	}
	report := b.AuditReport()
	md := report.Markdown()
	fmt.Fprint(stdout, "\n"+md)
	if path == "" {
		return nil
	}
	js, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{path + ".md": []byte(md), path + ".json": append(js, '\n')}
	switch filepath.Ext(path) {
	case ".md":
		files = map[string][]byte{path: []byte(md)}
	case ".json":
		files = map[string][]byte{path: append(js, '\n')}
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return fmt.Errorf("audit report: %w", err)
		}
	}
	return nil
}

// stdin is what -exit-on-stdin-close watches; tests replace it with a pipe.
var stdin io.Reader = os.Stdin

// watchEOF reads and discards r until it ends (end of file or an error)
// and then closes the returned channel. A launcher that starts the binary
// with -exit-on-stdin-close holds the other end of a pipe on its stdin; when
// the launcher exits, by any means including SIGKILL, the kernel closes that
// end and the broker closes too. The reading goroutine ends with r; in the
// binary that is at the latest when the process exits.
func watchEOF(r io.Reader) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(io.Discard, r)
	}()
	return done
}

// newLogger returns the slog logger cfg asks for, writing to w.
func newLogger(cfg *config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", cfg.LogLevel, err)
	}
	ho := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return slog.New(slog.NewTextHandler(w, ho)), nil
}

// writeReadyFile writes addr and a newline to path through a temporary file
// and a rename, so a launcher polling for the file never reads half of it.
func writeReadyFile(path, addr string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

// advertiseOption is -advertise: one address, or one per broker separated
// by commas.
func advertiseOption(addrs string) broker.Option {
	if strings.Contains(addrs, ",") {
		return broker.WithAdvertiseBrokers(strings.Split(addrs, ",")...)
	}
	return broker.WithAdvertise(addrs)
}
