#!/usr/bin/env bash
# Runs the container tests (this module): TestMain builds the image with
# go run ./cmd/vastimage and loads it into the container engine that
# DOCKER_HOST names; the tests start it with Testcontainers and drive it
# with franz-go through the mapped ports.
#
# Without DOCKER_HOST (and no Docker socket) it starts podman's Docker API
# service (podman system service) on a socket of its own for the run and
# stops it after; CONTAINERS_CONF, when set, configures that podman (else,
# with runc installed, the runc settings .ci/run writes). Every
# container the tests start carries the label vastfake.test-run=<this run>
# and is removed at the end, pass, fail or interrupt.
set -euo pipefail
cd "$(dirname "$0")"

tmp=$(mktemp -d)
service=""
run="vastfake-test-$$-$RANDOM"
cleanup() {
  status=$?
  # A test binary killed by a timeout skips its own cleanup.
  if [ -n "${DOCKER_HOST:-}" ] && command -v podman >/dev/null; then
    ids=$(podman --url "$DOCKER_HOST" ps -aq --filter "label=vastfake.test-run=$run" 2>/dev/null || true)
    [ -z "$ids" ] || podman --url "$DOCKER_HOST" rm -f $ids >/dev/null 2>&1 || true
  elif command -v docker >/dev/null; then
    ids=$(docker ps -aq --filter "label=vastfake.test-run=$run" 2>/dev/null || true)
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
  fi
  if [ -n "${image_loaded:-}" ]; then
    engine rmi -f "vastfake:$run" >/dev/null 2>&1 || true
  fi
  if [ -n "$service" ]; then
    kill "$service" 2>/dev/null || true
    wait "$service" 2>/dev/null || true
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT

if [ -z "${DOCKER_HOST:-}" ] && [ ! -S /var/run/docker.sock ]; then
  if ! command -v podman >/dev/null; then
    echo "containers/test.sh: no container engine: set DOCKER_HOST, or install podman (apt-get install -y podman runc)" >&2
    exit 1
  fi
  if [ -z "${CONTAINERS_CONF:-}" ] && command -v runc >/dev/null; then
    # The settings .ci/run uses: crun, podman's default runtime, fails on
    # some machines (hybrid cgroups, no raising RLIMIT_NOFILE); runc with
    # cgroupfs and no default ulimits works everywhere.
    printf '[containers]\ndefault_ulimits = []\n\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' >"$tmp/containers.conf"
    export CONTAINERS_CONF="$tmp/containers.conf"
  fi
  podman system service --time=0 "unix://$tmp/podman.sock" 2>"$tmp/service.log" &
  service=$!
  for _ in $(seq 100); do
    [ -S "$tmp/podman.sock" ] && break
    sleep 0.1
  done
  export DOCKER_HOST="unix://$tmp/podman.sock"
fi

# Ryuk, Testcontainers' reaper, is an image to pull; the tests remove
# their own containers instead.
export TESTCONTAINERS_RYUK_DISABLED=true VASTFAKE_TEST_RUN="$run"
go vet ./...
go test -race -count=1 "$@" ./... # arguments: go test flags, e.g. -run TestToken
if [ $# -gt 0 ]; then
  exit 0 # go test flags given: the Go tests only
fi

# One image for the JavaScript and Python helpers' tests, under a tag of
# this run's own, removed at the end (the Go tests load their own).
engine() {
  if command -v podman >/dev/null; then podman --url "$DOCKER_HOST" "$@"; else docker "$@"; fi
}
(cd .. && go run ./cmd/vastimage -o "$tmp/vastfake.tar" -version "$run" -latest=false >/dev/null)
engine load -i "$tmp/vastfake.tar" >/dev/null
rm -f "$tmp/vastfake.tar"
export VASTFAKE_IMAGE="vastfake:$run"
image_loaded=1

# The JavaScript helper (js/containers.js) against the same engine, with
# kafkajs: testcontainers 12 needs Node.js 22 or newer, which is
# VASTFAKE_TEST_NODE (.ci/run installs one) or node on PATH.
node=${VASTFAKE_TEST_NODE:-node}
if "$node" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' 2>/dev/null &&
  [ -f ../js/node_modules/testcontainers/package.json ]; then
  (cd ../js && "$node" --test test/containers.test.js)
elif [ -n "${CI:-}" ]; then
  echo "js/test/containers.test.js needs Node.js 22 or newer (set VASTFAKE_TEST_NODE) and cd js && npm ci" >&2
  exit 1
else
  echo "skipping js/test/containers.test.js: it needs Node.js 22 or newer (set VASTFAKE_TEST_NODE to one) and cd js && npm ci" >&2
fi

# The Python helper (python/vastfake/containers.py) with the Confluent
# client, and the pytest plugin attached to a container (VASTFAKE_URL).
if /usr/bin/python3 -c 'import pytest, confluent_kafka' 2>/dev/null; then
  (cd .. && go build -o "$tmp/vastfake" ./cmd/vastfake &&
    PYTHONPATH=python:python/tests PYTHONDONTWRITEBYTECODE=1 VASTFAKE_BIN="$tmp/vastfake" \
      /usr/bin/python3 -m pytest -q -p no:cacheprovider -p vastfake.pytest_plugin python/tests/test_containers.py)
elif [ -n "${CI:-}" ]; then
  echo "python/tests/test_containers.py needs /usr/bin/python3 with pytest and confluent-kafka" >&2
  exit 1
else
  echo "skipping python/tests/test_containers.py: /usr/bin/python3 lacks pytest or confluent-kafka" >&2
fi

# The code blocks of the pages that need a container engine, as written
# (internal/docblocks: docker run, Compose, TLS, the Testcontainers examples
# in JavaScript and Python), against the packages test.sh built.
if [ -n "${VASTFAKE_DOCS_SKIP:-}" ]; then
  echo "skipping the pages' container blocks (internal/docblocks): test.sh skipped the others for want of npm, python3-venv or pytest" >&2
elif [ -n "${VASTFAKE_DIST:-}" ]; then
  (cd .. && VASTFAKE_DOCS_ENGINE=1 go test -count=1 -timeout 30m -run 'TestDocBlocksWithAnEngine' ./internal/docblocks)
else
  echo "skipping the pages' container blocks (internal/docblocks): they need VASTFAKE_DIST, which ./test.sh sets" >&2
fi
