"""The launcher: finding or building the binary, and the errors and cleanup
a test sees when something goes wrong (no binary, a taken port, a broker
that dies, a test process that is interrupted)."""

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import vastfake
from vastfake import Broker

PACKAGE_DIR = pathlib.Path(vastfake.__file__).resolve().parent


def refused(bootstrap, timeout=30.0):
    """Wait until nothing listens at bootstrap any more; False after timeout."""
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_kafka_version_is_a_start_argument(vastfake_bin):
    with Broker(binary=vastfake_bin, profile="kafka", kafka_version="4.0") as b:
        assert b.health().kafka_version == "4.0"
    with Broker(binary=vastfake_bin) as b:
        assert b.health().kafka_version == "4.3", "the default"
    with pytest.raises(vastfake.StartError, match=r"-kafka-version .*want one of 4\.0, 4\.1, 4\.2, 4\.3"):
        Broker(binary=vastfake_bin, kafka_version="3.9").start()


def test_context_manager_starts_and_stops(vastfake_bin):
    with Broker(binary=vastfake_bin, topics=["orders:3"], rules={"MaxGroups": 5, "NoCompression": False}) as b:
        assert b.running()
        host, port = b.bootstrap.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        assert b.health().bootstrap == b.bootstrap
        assert [p.partition for p in b.topic("orders").partitions] == [0, 1, 2]
        rules = b.rules()
        assert rules["MaxGroups"] == 5 and rules["NoCompression"] is False
    assert not b.running()
    assert b.proc.returncode == 0, b.stderr_tail()  # SIGTERM: a clean close
    assert refused(b.bootstrap)
    assert b.stop() == 0  # a second stop is harmless


def test_control_plane_needs_the_token(vastfake_bin):
    with Broker(binary=vastfake_bin, args=["-user", "app:secret"]) as b:
        assert b.token
        b.topics()  # the launcher sends it
        with pytest.raises(vastfake.ControlPlaneError) as e:
            vastfake.Client(b.url).topics()
        assert e.value.status == 401


def test_missing_binary_says_how_to_get_one(tmp_path):
    # A copy of the package outside any checkout, with neither VASTFAKE_BIN,
    # vastfake nor go on PATH.
    shutil.copytree(PACKAGE_DIR, tmp_path / "pkg" / "vastfake")
    env = {"PATH": str(tmp_path / "empty"), "PYTHONPATH": str(tmp_path / "pkg"), "PYTHONDONTWRITEBYTECODE": "1"}
    code = textwrap.dedent("""
        import vastfake
        try:
            vastfake.Broker().start()
        except vastfake.BinaryNotFoundError as e:
            print(e)
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "no vastfake binary" in run.stdout
    # A way that works from a clone today, and the published one for later.
    assert "in a clone of the vastfake repository with `go install ./cmd/vastfake`" in run.stdout
    assert "VASTFAKE_BIN" in run.stdout
    assert "`go install github.com/vastfake/vastfake/cmd/vastfake@latest` works once the module is published" \
        in run.stdout


def test_vastfake_bin_that_is_not_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("VASTFAKE_BIN", str(tmp_path / "nope"))
    with pytest.raises(vastfake.BinaryNotFoundError, match="VASTFAKE_BIN=.*nope is not an executable file"):
        Broker().start()


@pytest.mark.skipif(shutil.which("go") is None, reason="needs go on PATH")
def test_builds_the_binary_inside_a_checkout_once(tmp_path):
    # No VASTFAKE_BIN and no vastfake on PATH, but go is and the package
    # sits in the vastfake checkout: the launcher builds the binary, says
    # so, and caches it on disk. Two processes build at once into an empty
    # cache; a third finds their binary and builds nothing.
    src = vastfake.broker._checkout(PACKAGE_DIR) or vastfake.broker._checkout(pathlib.Path.cwd())
    if src is None:
        pytest.skip("the package and the working directory are outside a vastfake checkout")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("VASTFAKE_BIN", "VASTFAKE_SRC")}
    env.update(PATH=os.path.dirname(shutil.which("go")), VASTFAKE_CACHE_DIR=str(cache),
               PYTHONPATH=str(PACKAGE_DIR.parent), PYTHONDONTWRITEBYTECODE="1")
    code = "import os, vastfake; b = vastfake.find_binary(); assert os.access(b, os.X_OK); print(b)"

    def start():
        return subprocess.Popen([sys.executable, "-c", code], cwd=src, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    runs = [p.communicate(timeout=300) + (p.returncode,) for p in [start(), start()]]
    for out, err, code_ in runs:
        assert code_ == 0, err
        assert err.startswith("vastfake: building the broker from %s (go build ./cmd/vastfake); it is cached in "
                              % src), err
        assert pathlib.Path(out.strip()).parent == cache
    assert runs[0][0] == runs[1][0]
    out, err = start().communicate(timeout=300)
    assert (out, err) == (runs[0][0], "")  # no build, no notice
    assert os.listdir(cache) == [os.path.basename(out.strip())]  # no temporary file left
    with Broker(binary=out.strip()) as b:
        assert b.health().status == "ok"


def test_port_taken(vastfake_bin):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        taken = "127.0.0.1:%d" % s.getsockname()[1]
        with pytest.raises(vastfake.PortInUseError) as e:
            Broker(binary=vastfake_bin, listen=taken).start()
    msg = str(e.value)
    assert "the port is taken" in msg and taken in msg
    assert "address already in use" in e.value.stderr  # the broker's own words


def test_bad_flag_quotes_stderr(vastfake_bin):
    with pytest.raises(vastfake.StartError) as e:
        Broker(binary=vastfake_bin, args=["-no-such-flag"]).start()
    assert "exited with code 2 before it listened" in str(e.value)
    assert "flag provided but not defined: -no-such-flag" in str(e.value)


def test_old_binary_is_named(tmp_path):
    # A binary that does not know -exit-on-stdin-close, as an old vastfake.
    old = tmp_path / "vastfake"
    old.write_text("#!/bin/sh\necho 'flag provided but not defined: -exit-on-stdin-close' >&2\nexit 2\n")
    old.chmod(0o755)
    with pytest.raises(vastfake.StartError, match="older than the vastfake package"):
        Broker(binary=str(old)).start()


def test_start_timeout(tmp_path):
    slow = tmp_path / "vastfake"
    slow.write_text("#!/bin/sh\necho starting >&2\nexec sleep 60\n")
    slow.chmod(0o755)
    with pytest.raises(vastfake.StartError, match="printed no 'listening on' line within 0.5s") as e:
        Broker(binary=str(slow), start_timeout=0.5).start()
    assert "starting" in str(e.value)


def test_dead_broker_fails_the_next_call(vastfake_bin):
    b = Broker(binary=vastfake_bin).start()
    try:
        b.wait_for("its start log line", lambda: "vastfake started" in b.stderr_tail())
        os.kill(b.pid, signal.SIGKILL)
        b.proc.wait(timeout=30)
        with pytest.raises(vastfake.BrokerDiedError) as e:
            b.topics()
        msg = str(e.value)
        assert "died" in msg and "signal SIGKILL" in msg
        assert "vastfake started" in msg  # the tail of its stderr
    finally:
        b.stop()


def test_unstarted_and_stopped_brokers_say_so(vastfake_bin):
    b = Broker(binary=vastfake_bin)
    with pytest.raises(vastfake.VastfakeError, match="not started"):
        b.topics()
    b.start()
    b.stop()
    with pytest.raises(vastfake.VastfakeError, match="was stopped"):
        b.topics()


# A test process that starts a broker and sleeps. It first sets the signal
# state it is tested in, whatever it inherited: SIGINT, SIGTERM and SIGHUP
# as a Python started from an interactive shell has them (nohup, a shell's
# background job or a CI runner may have left SIGINT or SIGHUP ignored, and
# a launcher rightly leaves an ignored signal alone), except those named in
# argv[2:], which it ignores. It echoes each line of its stdin.
INTERRUPTED = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    for name in sys.argv[2:]:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    import vastfake
    b = vastfake.Broker(binary=sys.argv[1]).start()
    print(b.bootstrap, flush=True)
    for line in sys.stdin:  # echoes each line, until stdin closes
        print(line.strip(), flush=True)
""")


def start_test_process(vastfake_bin, *ignored):
    """Start INTERRUPTED, ignoring the signals named in ignored; return
    the process and its broker's bootstrap address."""
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR.parent), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, vastfake_bin, *ignored], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.PIPE, text=True, env=env)
    bootstrap = proc.stdout.readline().strip()
    if not bootstrap:
        proc.kill()
        proc.wait()
        pytest.fail("the test process did not start its broker: %s" % proc.stderr.read())
    return proc, bootstrap


def end(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for f in (proc.stdin, proc.stdout, proc.stderr):
        f.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
def test_broker_dies_with_an_interrupted_test_process(vastfake_bin, sig):
    proc, bootstrap = start_test_process(vastfake_bin)
    try:
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert refused(bootstrap), "the broker outlived the test process killed by %s" % sig.name
    finally:
        end(proc)


def test_an_ignored_sighup_stays_ignored(vastfake_bin):
    # Under nohup the test process ignores SIGHUP: the launcher installs no
    # handler that would stop its broker, so both carry on; SIGTERM still
    # stops them.
    proc, bootstrap = start_test_process(vastfake_bin, "SIGHUP")
    try:
        proc.send_signal(signal.SIGHUP)
        # A handler would run before the process reads the next line.
        proc.stdin.write("after SIGHUP\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "after SIGHUP\n", "the test process died of an ignored SIGHUP"
        host, port = bootstrap.rsplit(":", 1)
        socket.create_connection((host, int(port)), timeout=10).close()  # its broker still listens
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        assert refused(bootstrap)
    finally:
        end(proc)


def test_build_cache_keeps_the_most_recently_used(tmp_path):
    # The cache's bound: the binary just built or used and the 4 most
    # recently used others; temporary files of builds that died over an
    # hour ago go too, those of builds under way stay.
    now = time.time()
    for i in range(7):
        f = tmp_path / ("vastfake-old%d" % i)
        f.write_text("")
        os.utime(f, (now - 100 * (i + 1), now - 100 * (i + 1)))  # old0 is the most recent
    dead, building = tmp_path / ".vastfake-dead-1-x", tmp_path / ".vastfake-building-2-y"
    dead.write_text("")
    os.utime(dead, (now - 7200, now - 7200))
    building.write_text("")
    keep = tmp_path / "vastfake-new"
    keep.write_text("")
    os.utime(keep, (now - 10000, now - 10000))  # kept however old: it is the one in use
    vastfake.broker._prune_cache(tmp_path, keep)
    assert sorted(os.listdir(tmp_path)) == sorted([".vastfake-building-2-y", "vastfake-new", "vastfake-old0",
                                                   "vastfake-old1", "vastfake-old2", "vastfake-old3"])
