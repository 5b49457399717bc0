// Package interop holds vastfake's end-to-end tests with Kafka clients
// written by others: IBM/sarama, segmentio/kafka-go and confluent-kafka-go
// in-process, and the Confluent Python client and kafkajs against the
// vastfake binary. It is a separate module so that importing vastfake never
// pulls those clients in. There is no code here outside the tests (and
// cmd/deletegroup); run them with `go test -race ./...` after
// `npm ci` in kafkajs/.
package interop
