#!/usr/bin/env bash
# Runs every test: the root module (broker, coordinator, log, fixtures, the
# binary, end-to-end tests, and the heavy ones behind the build tag heavy)
# and the interop module (sarama, kafka-go, confluent-kafka-go, the
# Confluent Python client), all with the race detector; every fuzz target
# of the root module for a few seconds (FUZZTIME, 3000x: 3,000 inputs, by
# default); every benchmark and cmd/vastbench once; then
# the Python package (python/ and examples/pytest) when /usr/bin/python3 has
# what it needs, and the JavaScript package (js/) when node and its npm ci
# are there (both required when CI is set), each also from the wheel or npm
# packages that carry the binary (cmd/vastdist, for this platform); the code
# blocks of Getting started, Packages and Containers as written
# (internal/docblocks, when npm and python3-venv are there); and the
# container image with its Testcontainers helpers (containers/test.sh: Go, Python,
# and js/'s under Node.js 22) when there is a container engine: DOCKER_HOST,
# a Docker socket, or podman (required when CI is set).
set -euo pipefail
cd "$(dirname "$0")"

# What this machine lacks, said before the run and again after it: go test
# does not print the tests that skip for want of a tool. With CI set they
# fail instead (.ci/run installs everything).
skipped=()
skip() {
  skipped+=("$1")
  echo "skipping $1" >&2
}
py_missing=$(/usr/bin/python3 - <<'PY' 2>/dev/null || echo python3
import importlib.util
need = {"pytest": "python3-pytest", "pip": "python3-pip", "setuptools": "python3-setuptools",
        "confluent_kafka": "python3-confluent-kafka", "kafka": "python3-kafka"}
print(" ".join(pkg for mod, pkg in need.items() if importlib.util.find_spec(mod) is None))
PY
)
if [ -z "${CI:-}" ]; then
  [ -x /usr/bin/chromium ] || skip "the live page test (control): it needs /usr/bin/chromium (apt-get install -y chromium)"
  if [ -n "$py_missing" ]; then
    skip "python/ and examples/pytest, and the interop tests that need what is missing: /usr/bin/python3 lacks $py_missing (apt-get install -y $py_missing)"
  fi
  if ! command -v node >/dev/null || [ ! -f interop/kafkajs/node_modules/kafkajs/package.json ]; then
    skip "the kafkajs matrix (interop): it needs node and kafkajs (cd interop/kafkajs && npm ci)"
  fi
  if ! command -v node >/dev/null || [ ! -f js/node_modules/kafkajs/package.json ]; then
    skip "js/: it needs node on PATH and kafkajs (cd js && npm ci)"
  fi
fi
# The pages' code blocks (internal/docblocks) run as a user would: npm,
# and a virtual environment of /usr/bin/python3 with pip.
docs_missing=""
command -v npm >/dev/null || docs_missing+=" npm"
/usr/bin/python3 -c 'import venv' 2>/dev/null || docs_missing+=" python3-venv"
if [ -z "${CI:-}" ] && [ -n "$docs_missing$py_missing" ]; then
  skip "the pages' code blocks (internal/docblocks): they need$docs_missing $py_missing (apt-get install -y nodejs npm python3-venv $py_missing)"
fi
have_engine() { [ -n "${DOCKER_HOST:-}" ] || [ -S /var/run/docker.sock ] || command -v podman >/dev/null; }
if [ -z "${CI:-}" ] && ! have_engine; then
  skip "the container image and its Testcontainers helper (containers/): they need podman (apt-get install -y podman runc) or Docker"
fi

go vet ./...
# The module builds, tests included, where users run it besides Linux.
GOOS=darwin go vet ./...
GOOS=windows go vet ./...
go test -race -count=1 ./...
# The heavy tests, kept out of the default go test by the build tag heavy so
# that it stays quick and deterministic: fixed-duration load tests and the
# memory bounds (TestMemory*), found by the tag so that a new one runs too.
# First with the race detector, as every test; then the memory bounds again
# without it, since its shadow memory hides resident memory.
mapfile -t heavy_tests < <(grep -rl --include='*_test.go' '^//go:build.*\bheavy\b' . | grep -v '^\./interop/' |
  xargs -r grep -ohE '^func Test[A-Za-z0-9_]+' | sed 's/^func //' | sort -u)
go test -race -count=1 -tags heavy -run "^($(IFS='|'; echo "${heavy_tests[*]}"))\$" ./...
go test -count=1 -tags heavy -run '^TestMemory' ./...
# Every fuzz target briefly, found by name so that a new one runs too: this
# keeps the targets building and their seed corpora passing, and now and
# then finds something (the failing input lands in the package's
# testdata/fuzz). Hunting takes longer: go test -run '^$' -fuzz FuzzX -fuzztime 10m ./pkg/
# The budget is a count of inputs, not a duration: Go 1.26's fuzz
# coordinator can report "context deadline exceeded" as a failure when a
# duration ends while a worker is mid-input (go.dev/issue/75804, fixed in
# Go 1.27), and inputs that wait on the broker take up to a quarter second.
mapfile -t fuzz_targets < <(grep -r --include='*_test.go' -oE '^func Fuzz[A-Za-z0-9_]+' . | grep -v '^\./interop/' | sort)
for found in "${fuzz_targets[@]}"; do
  file=${found%%:*} target=${found#*:func }
  go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-3000x}" -fuzzminimizetime 100x "./$(dirname "${file#./}")"
done
# Every benchmark once, and vastbench on tiny sizes, so that the tools the
# numbers in docs/performance.md come from keep working; the numbers here mean nothing.
go test -run '^$' -bench . -benchtime 1x ./...
go run ./cmd/vastbench -n 2000 -rounds 1 -quick
# The interop tests spend their time waiting on the clients' own timers
# (sessions, retries, elections), not on the CPU: each owns its broker and
# runs in parallel, eight at a time rather than go test's one per core.
if [ -d interop ]; then
  (cd interop && go vet ./... && go test -race -count=1 -parallel 8 ./...)
fi
# The launcher packages run the binary built here.
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

# together runs the functions it is given at once, each in a subshell with
# its output kept to a file of its own, then prints each output whole, in
# the order given, as each ends. It fails if any of them failed, naming them.
together() {
  local pids=() failed=() i
  mkdir -p "$tmp/together"
  for i in "$@"; do
    ("$i") >"$tmp/together/$i" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("$1")
    echo "--- $1"
    cat "$tmp/together/$1"
    shift
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    return 1
  fi
}
go build -o "$tmp/vastfake" ./cmd/vastfake
# The wheel and npm packages that carry the binary, for this machine's
# platform only (docs/packages.md: the one command builds every platform);
# python/tests/test_wheel.py and js/test/packages.test.js install them
# offline and run a broker from them with no Go on PATH.
go run ./cmd/vastdist -o "$tmp/dist" -platforms host >/dev/null
export VASTFAKE_DIST="$tmp/dist"
# The three below wait on brokers and clients more than on the CPU, so they
# run at once (together): each has its own brokers on ports of their own.
packages=()
# The code blocks of Getting started, Packages and Containers that need no
# container engine, run as written against those packages
# (internal/docblocks); containers/test.sh runs the others.
docblocks() { go test -count=1 -timeout 30m -run 'TestDocBlocksRun' ./internal/docblocks; }
if [ -z "$docs_missing$py_missing" ]; then
  packages+=(docblocks)
elif [ -n "${CI:-}" ]; then
  echo "the pages' code blocks (internal/docblocks) need$docs_missing $py_missing: apt-get install -y nodejs npm python3-venv $py_missing" >&2
  exit 1
else
  export VASTFAKE_DOCS_SKIP=1 # and containers/test.sh skips the others
fi

# The Python package (python/, with its tests and examples/pytest, the
# first Python test of Getting started) on /usr/bin/python3 with Debian's pytest,
# confluent-kafka and kafka-python. pip installs it into a temporary
# directory, offline, so that pytest loads the plugin through its pytest11
# entry point as it does for users.
python_package() {
  /usr/bin/python3 -m pip install -q --no-index --no-build-isolation --no-deps --root-user-action=ignore \
    --target "$tmp/site" ./python
  rm -rf python/build python/vastfake.egg-info
  PYTHONPATH="$tmp/site" PYTHONDONTWRITEBYTECODE=1 VASTFAKE_BIN="$tmp/vastfake" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider --ignore=python/tests/test_containers.py python/tests examples/pytest
}
if [ -z "$py_missing" ]; then
  packages+=(python_package)
elif [ -n "${CI:-}" ]; then
  echo "python/ needs Debian packages for /usr/bin/python3: apt-get install -y $py_missing" >&2
  exit 1
fi

# The JavaScript package (js/, with the first JavaScript test of Getting started)
# under node --test, with kafkajs from npm ci.
# containers.test.js runs in containers/test.sh, with a container engine.
js_package() { (cd js && VASTFAKE_BIN="$tmp/vastfake" node --test $(ls test/*.test.js | grep -v '/containers\.test\.js$')); }
if command -v node >/dev/null && [ -f js/node_modules/kafkajs/package.json ]; then
  packages+=(js_package)
elif [ -n "${CI:-}" ]; then
  echo "js/ needs node and its devDependencies: cd js && npm ci" >&2
  exit 1
fi
together "${packages[@]}"

# The container image (go run ./cmd/vastimage) and the Testcontainers
# helper (containers/), run by a real client through the mapped ports.
if have_engine; then
  containers/test.sh
elif [ -n "${CI:-}" ]; then
  echo "the container tests need podman (apt-get install -y podman runc) or Docker" >&2
  exit 1
fi

if [ ${#skipped[@]} -gt 0 ]; then
  echo "passed, but skipped:" >&2
  printf '  %s\n' "${skipped[@]}" >&2
fi
