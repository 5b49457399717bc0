// Package interop holds vastfake's end-to-end tests with Kafka clients
// written by others (IBM/sarama, segmentio/kafka-go). It is a separate
// module so that importing vastfake never pulls those clients in. There is
// no code here outside the tests; run them with `go test -race ./...`.
package interop
