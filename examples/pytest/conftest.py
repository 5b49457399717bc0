"""A pytest fixture that runs vastfake, the in-memory VAST Event Broker, for a
test session.

Copy this file next to your tests. The fixture ``kafka_bootstrap`` starts the
vastfake binary on a free port, waits for its first line on stdout
("listening on host:port"), yields the bootstrap address, and stops the
broker when the session ends:

    def test_orders(kafka_bootstrap):
        producer = Producer({"bootstrap.servers": kafka_bootstrap, ...})

The binary is, in this order: VASTFAKE_BIN when set; one built with
``go build`` from VASTFAKE_SRC (a checkout of vastfake) or from the vastfake
checkout this file sits in; or ``vastfake`` on PATH, which is what a copy of
this file in your project uses (install it with
``go install github.com/vastfake/vastfake/cmd/vastfake@latest``).
VASTFAKE_ARGS adds flags, e.g. "-topic orders:3 -profile kafka"; every flag
also has an environment variable (see the README).
"""

import os
import pathlib
import shlex
import shutil
import subprocess

import pytest

MODULE = "module github.com/vastfake/vastfake"


def vastfake_checkout():
    """The vastfake checkout to build from: VASTFAKE_SRC, else the one this
    file sits in, else None (a copy in another project)."""
    if os.environ.get("VASTFAKE_SRC"):
        return pathlib.Path(os.environ["VASTFAKE_SRC"])
    for d in pathlib.Path(__file__).resolve().parents:
        gomod = d / "go.mod"
        if gomod.is_file() and gomod.read_text().splitlines()[:1] == [MODULE]:
            return d
    return None


@pytest.fixture(scope="session")
def vastfake_bin(tmp_path_factory):
    """The path of the vastfake binary: VASTFAKE_BIN, one built with go build
    from a vastfake checkout, or vastfake on PATH."""
    if os.environ.get("VASTFAKE_BIN"):
        return os.environ["VASTFAKE_BIN"]
    src = vastfake_checkout()
    if src is not None and shutil.which("go"):
        out = tmp_path_factory.mktemp("vastfake") / "vastfake"
        subprocess.run(["go", "build", "-o", str(out), "./cmd/vastfake"], cwd=src, check=True)
        return str(out)
    found = shutil.which("vastfake")
    if found:
        return found
    raise RuntimeError("no vastfake binary: set VASTFAKE_BIN, put vastfake on PATH "
                       "(go install github.com/vastfake/vastfake/cmd/vastfake@latest), "
                       "or set VASTFAKE_SRC to a vastfake checkout and have go on PATH")


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
