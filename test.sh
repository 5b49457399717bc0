#!/usr/bin/env bash
# Runs every test: the root module (broker, coordinator, log, fixtures, the
# binary, end-to-end tests) and the interop module (sarama, kafka-go,
# confluent-kafka-go, the Confluent Python client), all with the race
# detector.
set -euo pipefail
cd "$(dirname "$0")"
go vet ./...
go test -race -count=1 ./...
if [ -d interop ]; then
  (cd interop && go vet ./... && go test -race -count=1 ./...)
fi
