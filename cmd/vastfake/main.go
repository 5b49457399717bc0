// Command vastfake runs an in-memory Kafka broker that behaves like VAST
// Event Broker 5.5, for developing and testing apps in any language.
//
//	go run ./cmd/vastfake                      # VAST profile on 127.0.0.1:9092
//	go run ./cmd/vastfake -listen 127.0.0.1:0 -topic orders:3 -profile kafka
//
// The first line on stdout is the bootstrap address ("listening on
// host:port"). Every flag can also be set by the environment variable named
// in its help. SIGINT or SIGTERM closes the broker.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vastfake/vastfake/broker"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "vastfake:", err)
		os.Exit(2)
	}
}

// topicFlags collects repeatable -topic name:partitions flags.
type topicFlags []broker.TopicSpec

func (t *topicFlags) String() string { return "" }

func (t *topicFlags) Set(v string) error {
	for _, one := range strings.Split(v, ",") {
		one = strings.TrimSpace(one)
		if one == "" {
			continue
		}
		name, parts, ok := strings.Cut(one, ":")
		n := 1
		if ok {
			var err error
			if n, err = strconv.Atoi(parts); err != nil || n <= 0 {
				return fmt.Errorf("topic %q: partitions must be a positive number", one)
			}
		}
		*t = append(*t, broker.TopicSpec{Name: name, Partitions: int32(n)})
	}
	return nil
}

// run parses flags, starts the broker, prints its address and serves until
// a signal arrives or stop is closed (tests use stop).
func run(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	fs := flag.NewFlagSet("vastfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", env("VASTFAKE_LISTEN", "127.0.0.1:9092"), "address to listen on; port 0 picks a free one (env VASTFAKE_LISTEN)")
	advertise := fs.String("advertise", env("VASTFAKE_ADVERTISE", ""), "host:port clients are told to connect to; default the listen address (env VASTFAKE_ADVERTISE)")
	profile := fs.String("profile", env("VASTFAKE_PROFILE", "vast"), "rules to enforce: vast or kafka (env VASTFAKE_PROFILE)")
	logLevel := fs.String("log-level", env("VASTFAKE_LOG_LEVEL", "info"), "debug, info, warn or error (env VASTFAKE_LOG_LEVEL)")
	var topics topicFlags
	fs.Var(&topics, "topic", "topic to create at start, name:partitions; repeatable (env VASTFAKE_TOPICS, comma-separated)")
	if v := os.Getenv("VASTFAKE_TOPICS"); v != "" {
		if err := topics.Set(v); err != nil {
			return err
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("log level %q: %w", *logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	b, err := broker.New(
		broker.WithListen(*listen),
		broker.WithAdvertise(*advertise),
		broker.WithProfile(*profile),
		broker.WithTopics(topics...),
		broker.WithLogger(logger),
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on %s\n", b.AdvertisedAddr())
	logger.Info("vastfake started", "listen", b.Addr(), "advertise", b.AdvertisedAddr(), "profile", *profile, "topics", len(topics))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		logger.Info("closing", "signal", s.String())
	case <-stop:
	}
	return b.Close()
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
