"""A pytest fixture that runs vastfake, the in-memory VAST Event Broker, for a
test session.

Copy this file next to your tests. The fixture ``kafka_bootstrap`` starts the
vastfake binary on a free port, waits for its first line on stdout
("listening on host:port"), yields the bootstrap address, and stops the
broker when the session ends:

    def test_orders(kafka_bootstrap):
        producer = Producer({"bootstrap.servers": kafka_bootstrap, ...})

The binary is VASTFAKE_BIN when set; otherwise the fixture builds it with
``go build`` from this repository (or from VASTFAKE_SRC, a checkout of
vastfake). VASTFAKE_ARGS adds flags, e.g. "-topic orders:3 -profile kafka";
every flag also has an environment variable (see the README).
"""

import os
import pathlib
import shlex
import subprocess

import pytest

REPO = pathlib.Path(os.environ.get("VASTFAKE_SRC", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture(scope="session")
def vastfake_bin(tmp_path_factory):
    """The path of the vastfake binary: VASTFAKE_BIN, or one built with go build."""
    if os.environ.get("VASTFAKE_BIN"):
        return os.environ["VASTFAKE_BIN"]
    out = tmp_path_factory.mktemp("vastfake") / "vastfake"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/vastfake"], cwd=REPO, check=True)
    return str(out)


@pytest.fixture(scope="session")
def kafka_bootstrap(vastfake_bin):
    """Start vastfake on a free port and yield its bootstrap address, host:port."""
    args = ["-listen", "127.0.0.1:0"] + shlex.split(os.environ.get("VASTFAKE_ARGS", ""))
    proc = subprocess.Popen([vastfake_bin] + args, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # blocks until the broker accepts connections
        if not line.startswith("listening on "):
            raise RuntimeError("vastfake did not start: first stdout line %r, exit code %r" % (line, proc.poll()))
        yield line.split()[-1]
    finally:
        proc.terminate()  # SIGTERM: vastfake closes and exits 0
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
