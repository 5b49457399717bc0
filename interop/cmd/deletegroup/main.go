// Command deletegroup deletes one consumer group with franz-go's kadm and
// prints "deleted" or the Kafka error name the broker answered (for example
// NON_EMPTY_GROUP); both exit 0. Any other failure (no connection, a timeout)
// goes to stderr with exit status 1.
//
// It stands in for AdminClient.delete_consumer_groups, which the Debian
// confluent-kafka (1.7) lacks, in the Consume events walkthrough
// (../../walkthrough/walkthrough.py):
//
//	deletegroup -bootstrap 127.0.0.1:9092 docs-consuming-rebalance
//
// KAFKA_USERNAME and KAFKA_PASSWORD, when set, log in with SASL/PLAIN, as the
// walkthrough does.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("KAFKA_BOOTSTRAP"), "broker address host:port (env KAFKA_BOOTSTRAP)")
	timeout := flag.Duration("timeout", 30*time.Second, "give up after this long")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: deletegroup -bootstrap host:port GROUP")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *bootstrap == "" {
		flag.Usage()
		os.Exit(2)
	}
	out, err := deleteGroup(*bootstrap, flag.Arg(0), *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "deletegroup:", err)
		os.Exit(1)
	}
	fmt.Println(out)
}

// deleteGroup returns "deleted" or the name of the Kafka error the broker
// answered for group.
func deleteGroup(bootstrap, group string, timeout time.Duration) (string, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(bootstrap)}
	if user := os.Getenv("KAFKA_USERNAME"); user != "" {
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: os.Getenv("KAFKA_PASSWORD")}.AsMechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = kadm.NewClient(cl).DeleteGroup(ctx, group)
	var kafkaErr *kerr.Error
	switch {
	case err == nil:
		return "deleted", nil
	case errors.As(err, &kafkaErr):
		return kafkaErr.Message, nil
	default:
		return "", err
	}
}
