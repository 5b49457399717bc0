"""Start the vastfake binary for a test and stop it afterwards.

    with vastfake.Broker(topics=["orders:3"]) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap, ...})
        ...
        broker.assert_no_refusals()

The binary is VASTFAKE_BIN when set, else the one a platform wheel carries
(vastfake/bin/vastfake), else ``vastfake`` on PATH, else one built with
``go build`` when the current directory (or this package) is inside a
vastfake checkout (or VASTFAKE_SRC names one); the build says so on stderr
and is cached on disk for later processes.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import os
import pathlib
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .client import Client
from .errors import BinaryNotFoundError, BrokerDiedError, PortInUseError, StartError, VastfakeError

__all__ = ["Broker", "find_binary"]

MODULE_LINE = "module github.com/vastfake/vastfake"
INSTALL_HINT = ("install a platform wheel of vastfake, which carries the binary, or "
                "build it in a clone of the vastfake repository with `go install ./cmd/vastfake` (then it is "
                "$(go env GOPATH)/bin/vastfake; put that on PATH) or `go build -o /some/dir/vastfake ./cmd/vastfake` "
                "and set VASTFAKE_BIN to it, or set VASTFAKE_SRC to the clone (with go on PATH) to have it built and "
                "cached; `go install github.com/vastfake/vastfake/cmd/vastfake@latest` works once the module is "
                "published")
#: What to run to replace a binary older than this package.
UPDATE_HINT = ("rebuild it from an up-to-date vastfake clone: go install ./cmd/vastfake (or, once the module is "
               "published, go install github.com/vastfake/vastfake/cmd/vastfake@latest)")
#: How many built binaries the cache keeps (one per state of a source
#: tree), the most recently used first.
CACHE_KEEP = 5

#: How many of the broker's first and last stderr lines an error quotes:
#: the first say why it would not start (before the usage a flag error
#: prints), the last what it did before it died.
STDERR_HEAD_LINES = 5
STDERR_TAIL_LINES = 40

_build_lock = threading.Lock()
_built: Dict[str, str] = {}  # checkout -> binary built from it in this process


def _checkout(start: pathlib.Path) -> Optional[pathlib.Path]:
    for d in [start, *start.parents]:
        gomod = d / "go.mod"
        try:
            if gomod.is_file() and gomod.read_text().splitlines()[:1] == [MODULE_LINE]:
                return d
        except OSError:
            continue
    return None


def carried_binary() -> Optional[str]:
    """The binary a platform wheel carries (vastfake/bin/vastfake, .exe on
    Windows), built from the same sources as this package; None when this
    package was installed from source, which carries none."""
    exe = pathlib.Path(__file__).resolve().parent / "bin" / ("vastfake.exe" if sys.platform == "win32" else "vastfake")
    if not exe.is_file():
        return None
    if not os.access(exe, os.X_OK):
        # pip keeps the wheel's mode 0755; an installer that drops it leaves
        # a file this process may still make executable.
        try:
            exe.chmod(exe.stat().st_mode | 0o111)
        except OSError:
            pass
        if not os.access(exe, os.X_OK):
            raise BinaryNotFoundError("%s (the binary this wheel carries) is not executable: chmod +x it" % exe)
    return str(exe)


def find_binary(build_timeout: float = 300.0) -> str:
    """Return the path of a vastfake binary: VASTFAKE_BIN; else the one the
    platform wheel carries; else vastfake on PATH; else one built with ``go
    build`` from VASTFAKE_SRC, or from the vastfake checkout the current
    directory or this package is in. Raises BinaryNotFoundError saying how
    to get one otherwise."""
    env = os.environ.get("VASTFAKE_BIN")
    if env:
        if not os.path.isfile(env) or not os.access(env, os.X_OK):
            raise BinaryNotFoundError("VASTFAKE_BIN=%s is not an executable file; %s" % (env, INSTALL_HINT))
        return env
    found = carried_binary() or shutil.which("vastfake")
    if found:
        return found
    src: Optional[pathlib.Path] = None
    if os.environ.get("VASTFAKE_SRC"):
        src = pathlib.Path(os.environ["VASTFAKE_SRC"])
        if _checkout(src) != src:
            raise BinaryNotFoundError("VASTFAKE_SRC=%s is not a vastfake checkout (no go.mod starting %r)"
                                      % (src, MODULE_LINE))
    else:
        src = _checkout(pathlib.Path.cwd().resolve()) or _checkout(pathlib.Path(__file__).resolve().parent)
    if src is None:
        raise BinaryNotFoundError("no vastfake binary: VASTFAKE_BIN is not set, vastfake is not on PATH, and "
                                  "this is not a vastfake checkout; " + INSTALL_HINT)
    go = shutil.which("go")
    if go is None:
        raise BinaryNotFoundError("no vastfake binary: %s is a vastfake checkout but go is not on PATH to build it; "
                                  % src + INSTALL_HINT)
    with _build_lock:
        key = str(src)
        if key in _built and os.path.isfile(_built[key]):
            return _built[key]
        out = _build(src, go, build_timeout)
        _built[key] = out
        return out


def cache_dir() -> pathlib.Path:
    """The directory built binaries are cached in: VASTFAKE_CACHE_DIR, else
    vastfake in the user's cache directory (XDG_CACHE_HOME or ~/.cache,
    ~/Library/Caches on macOS, LOCALAPPDATA on Windows)."""
    if os.environ.get("VASTFAKE_CACHE_DIR"):
        return pathlib.Path(os.environ["VASTFAKE_CACHE_DIR"]).resolve()
    base: Optional[str]
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base or tempfile.gettempdir()) / "vastfake"


def _build_files(root: pathlib.Path) -> List[str]:
    """The files, sorted, of the checkout at root that go build
    ./cmd/vastfake can read: go.mod, go.sum and every file but tests in a
    directory with Go code (embedded files sit next to it), skipping what
    the go command skips (testdata, names starting with . or _) and nested
    modules."""
    files: List[str] = []

    def walk(rel: str) -> None:
        try:
            entries = list(os.scandir(os.path.join(root, rel)))
        except OSError:
            return
        names = [e.name for e in entries if e.is_file(follow_symlinks=False)]
        if rel == "":
            files.extend(n for n in names if n in ("go.mod", "go.sum"))
        if any(n.endswith(".go") and not n.endswith("_test.go") for n in names):
            files.extend(rel + "/" + n if rel else n for n in names
                         if not n.endswith("_test.go") and not (rel == "" and n in ("go.mod", "go.sum")))
        for e in entries:
            if not e.is_dir(follow_symlinks=False) or e.name[:1] in (".", "_") or e.name in ("testdata", "node_modules"):
                continue
            sub = rel + "/" + e.name if rel else e.name
            if not os.path.exists(os.path.join(root, sub, "go.mod")):
                walk(sub)

    walk("")
    return sorted(files)


def _source_key(src: pathlib.Path, go: str) -> str:
    """The name of the binary go would build from the checkout at src: a
    hash of the go version, the environment that changes what it builds,
    and the path, size and contents of every file _build_files lists. The
    JavaScript package computes the same key, so both share the cache."""
    h = hashlib.sha256()
    try:
        version = subprocess.run([go, "version"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    h.update(version.strip().encode() + b"\0")
    for name in ("GOOS", "GOARCH", "GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT"):
        h.update(os.environ.get(name, "").encode() + b"\0")
    for rel in _build_files(src):
        data = (src / rel).read_bytes()
        h.update(("%s\0%d\0" % (rel, len(data))).encode())
        h.update(data)
    return h.hexdigest()[:20]


def _prune_cache(d: pathlib.Path, keep: pathlib.Path) -> None:
    """Remove all but the CACHE_KEEP most recently used binaries, never
    keep, and the temporary files of builds that died over an hour ago."""
    bins = []
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for e in entries:
        try:
            mtime = e.stat().st_mtime
            if e.name.startswith(".vastfake-") and time.time() - mtime > 3600:
                os.remove(e.path)
            elif e.name.startswith("vastfake-") and e.path != str(keep):
                bins.append((mtime, e.path))
        except OSError:
            pass
    for _, path in sorted(bins, reverse=True)[CACHE_KEEP - 1:]:
        try:
            os.remove(path)
        except OSError:
            pass


def _build(src: pathlib.Path, go: str, build_timeout: float) -> str:
    """Build ./cmd/vastfake in src into the cache, or return the cached
    build of the same sources. Concurrent builders (pytest-xdist workers,
    parallel jobs) each build to a file of their own and rename it into
    place, so a reader sees no binary or a whole one."""
    exe = ".exe" if sys.platform == "win32" else ""
    key = _source_key(src, go)
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        d = pathlib.Path(tempfile.mkdtemp(prefix="vastfake-"))  # no cache: a directory for this process
        atexit.register(shutil.rmtree, str(d), True)
    out = d / ("vastfake-%s%s" % (key, exe))
    if out.is_file() and os.access(out, os.X_OK):
        try:
            os.utime(out)  # used: the last to go when the cache is pruned
        except OSError:
            pass
        return str(out)
    tmp = d / (".vastfake-%s-%d-%s%s" % (key, os.getpid(), secrets.token_hex(4), exe))
    sys.stderr.write("vastfake: building the broker from %s (go build ./cmd/vastfake); it is cached in %s until the "
                     "sources change\n" % (src, d))
    sys.stderr.flush()
    try:
        run = subprocess.run([go, "build", "-o", str(tmp), "./cmd/vastfake"], cwd=src, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=build_timeout)
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        raise BinaryNotFoundError("go build ./cmd/vastfake in %s took over %gs" % (src, build_timeout)) from None
    if run.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BinaryNotFoundError("go build ./cmd/vastfake in %s failed:\n%s" % (src, run.stderr[-4000:]))
    os.replace(tmp, out)
    _prune_cache(d, out)
    return str(out)


# Brokers still running, stopped at interpreter exit and on SIGTERM/SIGHUP.
_live: "weakref.WeakSet[Broker]" = weakref.WeakSet()
_handlers_installed = False


def _stop_all() -> None:
    for b in list(_live):
        b.stop()


def _on_signal(signum, frame) -> None:
    _stop_all()
    # Then die of the signal as the process would have without us.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_stop_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can be set from the main thread only; -exit-on-stdin-close still applies
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        # Only where nobody chose a handler: ours would hide theirs.
        if signum is not None and signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _on_signal)


class Broker(Client):
    """A vastfake broker in a child process, with its control plane.

    Options (all keyword-only; every other flag goes in ``args``):

    - ``profile``: "vast" (the default), "kafka" or "audit".
    - ``kafka_version``: the Kafka release the kafka and audit profiles
      follow where 4.x releases differ, "4.0" to "4.3" (the default,
      -kafka-version).
    - ``topics``: topic specs created at start, "name[:partitions[:key=value,...]]".
    - ``rules``: rule overrides, {"MaxGroups": 10} or ["MaxGroups=10"].
    - ``manual_clock``: the broker's clock moves only by ``advance``.
    - ``brokers``: broker ids, each on its own address (1 to 16, default 1);
      ``bootstrap`` is the first; ``broker_down`` takes one away.
    - ``args``: more command-line flags, e.g. ["-log-level", "debug"].
    - ``listen``, ``http``: addresses; a free port on 127.0.0.1 by default.
    - ``binary``: the binary's path; found by find_binary by default.
    - ``env``: extra environment variables for the binary.
    - ``start_timeout`` (30 s), ``stop_timeout`` (10 s), ``timeout`` (each
      control plane call, 10 s), ``wait_timeout`` (each wait, 30 s).

    ``start()`` (or ``with``) starts it; ``stop()`` (or leaving the
    ``with``) sends SIGTERM and waits. The child also dies with this
    process: it is stopped at exit and on SIGTERM or SIGHUP, and it runs
    with -exit-on-stdin-close, so even a SIGKILL of this process ends it.
    """

    def __init__(self, *, profile: Optional[str] = None, kafka_version: Optional[str] = None, topics: Iterable[str] = (),
                 rules: Union[Mapping[str, Any], Iterable[str], None] = None, manual_clock: bool = False,
                 brokers: int = 1, args: Sequence[str] = (), listen: str = "127.0.0.1:0", http: str = "127.0.0.1:0",
                 binary: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 start_timeout: float = 30.0, stop_timeout: float = 10.0, timeout: float = 10.0,
                 wait_timeout: float = 30.0):
        super().__init__("http://unstarted/", token=None, timeout=timeout, wait_timeout=wait_timeout)
        self.profile = profile
        self.kafka_version = kafka_version
        self.topic_specs = list(topics)
        if isinstance(rules, Mapping):
            self.rule_specs = ["%s=%s" % (k, _rule_value(v)) for k, v in rules.items()]
        else:
            self.rule_specs = list(rules or ())
        self.manual_clock = manual_clock
        self.broker_count = brokers
        self.extra_args = list(args)
        self.listen, self.http = listen, http
        self.binary = binary
        self.env = dict(env or {})
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.bootstrap = ""
        self.proc: Optional[subprocess.Popen] = None
        self._stderr = _StderrTail()
        self._threads: List[threading.Thread] = []
        self._stopped = False

    # ---- lifecycle ----

    def command(self) -> List[str]:
        """The command line start runs (the token is generated per start)."""
        args = [self.binary or "vastfake", "-listen", self.listen, "-http", self.http, "-exit-on-stdin-close"]
        if self.profile:
            args += ["-profile", self.profile]
        if self.kafka_version:
            args += ["-kafka-version", self.kafka_version]
        for t in self.topic_specs:
            args += ["-topic", t]
        for r in self.rule_specs:
            args += ["-rule", r]
        if self.manual_clock:
            args.append("-manual-clock")
        if self.broker_count != 1:
            args += ["-brokers", str(self.broker_count)]
        return args + self.extra_args

    def start(self) -> "Broker":
        """Start the binary and wait (start_timeout) until it listens.
        Raises BinaryNotFoundError, PortInUseError, or StartError with the
        tail of the binary's stderr."""
        if self.proc is not None:
            raise VastfakeError("this broker was started already; make a new Broker")
        if self.binary is None:
            self.binary = find_binary()
        self.token = secrets.token_urlsafe(24)
        args = self.command()
        # Ours first, so that a -http-token in args wins as the flag package decides; read it back.
        args[1:1] = ["-http-token", self.token]
        for i, a in enumerate(args[:-1]):
            if a.lstrip("-") == "http-token" and i > 2:
                self.token = args[i + 1]
            elif a.lstrip("-").startswith("http-token="):
                self.token = a.split("=", 1)[1]
        env = dict(os.environ)
        env.update(self.env)
        _install_handlers()
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, text=True, errors="replace", bufsize=1)
        except OSError as e:
            raise BinaryNotFoundError("cannot run %s: %s; %s" % (args[0], e, INSTALL_HINT)) from None
        _live.add(self)
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self._threads = [
            threading.Thread(target=_read_stdout, args=(self.proc.stdout, lines), daemon=True,
                             name="vastfake-stdout"),
            threading.Thread(target=_read_stderr, args=(self.proc.stderr, self._stderr), daemon=True,
                             name="vastfake-stderr"),
        ]
        for t in self._threads:
            t.start()
        try:
            first = self._line(lines, "listening on ")
            self.bootstrap = first
            self.url = self._line(lines, "control plane on ")
        except BaseException:
            self._kill()
            raise
        return self

    def _line(self, lines: "queue.Queue[Optional[str]]", prefix: str) -> str:
        deadline = time.monotonic() + self.start_timeout
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise StartError("vastfake printed no %r line within %gs; stderr:\n%s"
                             % (prefix.strip(), self.start_timeout, self.stderr_tail()), self.stderr_tail()) from None
        if line is None:  # stdout ended: the binary exited
            code = self._wait_exit(5)
            self._join_readers()
            tail = self.stderr_tail()
            if re.search(r"address already in use|only one usage of each socket address", tail, re.I):
                raise PortInUseError("vastfake could not listen: the port is taken (listen=%s, http=%s); stderr:\n%s"
                                     % (self.listen, self.http, tail), tail, code)
            hint = ""
            if "flag provided but not defined: -exit-on-stdin-close" in tail:
                hint = "\nthis vastfake binary (%s) is older than the vastfake package; %s" % (self.binary, UPDATE_HINT)
            raise StartError("vastfake exited with %s before it listened; stderr:\n%s%s"
                             % (_exit_text(code), tail, hint), tail, code)
        if not line.startswith(prefix):
            raise StartError("vastfake printed %r where %r was expected; stderr:\n%s"
                             % (line, prefix + "...", self.stderr_tail()), self.stderr_tail())
        return line[len(prefix):].strip()

    def stop(self) -> Optional[int]:
        """Stop the broker: SIGTERM, then SIGKILL after stop_timeout. Safe to
        call twice and from signal handlers; returns the exit code."""
        proc = self.proc
        if proc is None or self._stopped:
            return None if proc is None else proc.returncode
        self._stopped = True
        _live.discard(self)
        if proc.poll() is None:
            try:
                proc.terminate()
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=self.stop_timeout)
            except OSError:
                pass
        self._close_pipes()
        return proc.returncode

    def _kill(self) -> None:
        proc = self.proc
        self._stopped = True
        _live.discard(self)
        if proc is not None and proc.poll() is None:
            proc.kill()
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                pass
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        self._join_readers()

    def _join_readers(self) -> None:
        for t in self._threads:
            t.join(timeout=2)

    def _wait_exit(self, timeout: float) -> Optional[int]:
        try:
            return self.proc.wait(timeout=timeout) if self.proc is not None else None
        except subprocess.TimeoutExpired:
            return None

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:
        try:
            if self.proc is not None and not self._stopped and self.proc.poll() is None:
                self.proc.kill()
        except Exception:
            pass

    # ---- state ----

    @property
    def pid(self) -> Optional[int]:
        return None if self.proc is None else self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self) -> str:
        """The broker's last stderr lines (its log), for error messages."""
        return self._stderr.text() or "(nothing)\n"

    def _check_alive(self) -> None:
        if self.proc is None:
            raise VastfakeError("the broker is not started; call start() or use it in a with block")
        if self._stopped:
            raise VastfakeError("the broker was stopped")
        code = self.proc.poll()
        if code is not None:
            self._join_readers()
            raise BrokerDiedError("the vastfake broker (pid %d) died: it exited with %s; stderr:\n%s"
                                  % (self.proc.pid, _exit_text(code), self.stderr_tail()), self.stderr_tail(), code)

    def __repr__(self) -> str:
        state = "running" if self.running() else "stopped" if self.proc else "unstarted"
        return "<vastfake.Broker %s bootstrap=%s control=%s>" % (state, self.bootstrap or "-", self.url)


def _rule_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def _exit_text(code: Optional[int]) -> str:
    if code is None:
        return "no exit code yet"
    if code < 0:
        try:
            return "signal %s" % signal.Signals(-code).name
        except ValueError:
            return "signal %d" % -code
    return "code %d" % code


def _read_stdout(stream, lines: "queue.Queue[Optional[str]]") -> None:
    try:
        for line in stream:
            lines.put(line.rstrip("\n"))
    except (OSError, ValueError):
        pass
    finally:
        lines.put(None)


class _StderrTail:
    """The first STDERR_HEAD_LINES and the last STDERR_TAIL_LINES lines of
    the broker's stderr, each cut to 2,000 characters."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.head: List[str] = []
        self.tail: "collections.deque[str]" = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.dropped = 0

    def add(self, line: str) -> None:
        if len(line) > 2000:
            line = line[:2000] + "...\n"
        with self.lock:
            if len(self.head) < STDERR_HEAD_LINES:
                self.head.append(line)
                return
            if len(self.tail) == self.tail.maxlen:
                self.dropped += 1
            self.tail.append(line)

    def text(self) -> str:
        with self.lock:
            gap = ["[... %d lines ...]\n" % self.dropped] if self.dropped else []
            return "".join(self.head + gap + list(self.tail))


def _read_stderr(stream, tail: _StderrTail) -> None:
    try:
        for line in stream:
            tail.add(line)
    except (OSError, ValueError):
        pass
