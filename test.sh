#!/usr/bin/env bash
# Runs every test: the root module (broker, coordinator, log, fixtures, the
# binary, end-to-end tests) and the interop module (sarama, kafka-go,
# confluent-kafka-go, the Confluent Python client), all with the race
# detector; every benchmark and cmd/vastbench once; then the pytest launcher
# example (examples/pytest) when /usr/bin/python3 has pytest (required when
# CI is set).
set -euo pipefail
cd "$(dirname "$0")"
go vet ./...
go test -race -count=1 ./...
# Every benchmark once, and vastbench on tiny sizes, so that the tools the
# README's numbers come from keep working; the numbers here mean nothing.
go test -run '^$' -bench . -benchtime 1x ./...
go run ./cmd/vastbench -n 2000 -rounds 1
if [ -d interop ]; then
  # The kafkajs tests skip (fail when CI is set) without node and kafkajs;
  # go test does not print skips, so say it here.
  if ! command -v node >/dev/null || [ ! -f interop/kafkajs/node_modules/kafkajs/package.json ]; then
    echo "skipping the kafkajs matrix: it needs node and kafkajs (cd interop/kafkajs && npm ci)" >&2
  fi
  (cd interop && go vet ./... && go test -race -count=1 ./...)
fi
if /usr/bin/python3 -c 'import pytest' 2>/dev/null; then
  PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider examples/pytest
elif [ -n "${CI:-}" ]; then
  echo "examples/pytest needs /usr/bin/python3 with pytest (apt-get install -y python3-pytest)" >&2
  exit 1
else
  echo "skipping examples/pytest: /usr/bin/python3 has no pytest (apt-get install -y python3-pytest)" >&2
fi
