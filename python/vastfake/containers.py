"""vastfake's container image for Python tests, in the shape of
testcontainers-python's modules, with the standard library only: it speaks
the Docker Engine API over the socket DOCKER_HOST names (Docker, or podman's
``podman system service``), as Testcontainers does.

    from vastfake.containers import VastfakeContainer

    with VastfakeContainer(topics=["orders:3"]) as kafka:
        bootstrap = kafka.get_bootstrap_server()   # "localhost:<mapped port>"
        ...                                        # any Kafka client
        kafka.wait_committed("billing", "orders", 0, 3)

The container runs the image (VASTFAKE_IMAGE, else "vastfake:latest") with
every broker's Kafka port and the control plane's port mapped to random host
ports; once GET /healthz answers, the mapped Kafka addresses are sent to
PUT /advertise, so that Metadata sends clients to the host ports. The object
is a vastfake.Client of the control plane: faults, waits, assertions, the
request log. Leaving the ``with`` (or ``stop()``) stops and removes the
container, whatever happened, and so does a start that fails.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import urllib.parse
import uuid
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .client import Client
from .errors import StartError, VastfakeError

__all__ = ["VastfakeContainer", "DockerError", "DEFAULT_IMAGE", "KAFKA_PORT", "HTTP_PORT"]

#: The image, unless the image argument or VASTFAKE_IMAGE names another.
DEFAULT_IMAGE = "vastfake:latest"
#: The image's ports: broker id i listens on KAFKA_PORT + i; the control plane on HTTP_PORT.
KAFKA_PORT = 9092
HTTP_PORT = 8080
#: The Docker Engine API version spoken; Docker 20.10 and podman 3 and newer serve it.
API_VERSION = "v1.41"
#: How much of a container's log a start error quotes.
LOG_TAIL_BYTES = 4000


class DockerError(VastfakeError):
    """The container engine answered an error (``status``) or could not be
    reached."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP connection over a Unix socket."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class _Engine:
    """The Docker Engine API at DOCKER_HOST (unix:// or tcp://), else
    /var/run/docker.sock."""

    def __init__(self, docker_host: Optional[str] = None, timeout: float = 60.0):
        self.docker_host = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        self.timeout = timeout
        u = urllib.parse.urlsplit(self.docker_host)
        if u.scheme == "unix":
            self._unix = u.path
            self.host = "localhost"  # where mapped ports are reached
        elif u.scheme in ("tcp", "http"):
            self._unix = None
            self._addr = (u.hostname or "localhost", u.port or 2375)
            self.host = u.hostname or "localhost"
        else:
            raise DockerError("DOCKER_HOST=%s: want unix:///path/to/socket or tcp://host:port "
                              "(TLS to the engine is not supported)" % self.docker_host)

    def _conn(self) -> http.client.HTTPConnection:
        if self._unix:
            return _UnixConnection(self._unix, self.timeout)
        return http.client.HTTPConnection(*self._addr, timeout=self.timeout)

    def call(self, method: str, path: str, body: Any = None, ok: Sequence[int] = (200, 201, 204, 304)) -> bytes:
        conn = self._conn()
        try:
            headers = {}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            try:
                conn.request(method, "/" + API_VERSION + path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except OSError as e:
                raise DockerError("no container engine at %s (%s): start Docker, or podman system service with "
                                  "DOCKER_HOST naming its socket" % (self.docker_host, e)) from None
        finally:
            conn.close()
        if resp.status not in ok:
            try:
                msg = json.loads(payload).get("message") or payload.decode("utf-8", "replace")
            except ValueError:
                msg = payload.decode("utf-8", "replace")
            raise DockerError("%s %s: %d %s" % (method, path.split("?")[0], resp.status, msg.strip()), resp.status)
        return payload

    def json(self, method: str, path: str, body: Any = None) -> Any:
        payload = self.call(method, path, body)
        return json.loads(payload) if payload else None


def _demux(stream: bytes) -> str:
    """The text of a container log as the API sends it without a TTY:
    frames of an 8-byte header (stream, 0, 0, 0, size) and their bytes."""
    out = []
    i = 0
    while i + 8 <= len(stream) and stream[i] in (0, 1, 2) and stream[i + 1:i + 4] == b"\0\0\0":
        size = int.from_bytes(stream[i + 4:i + 8], "big")
        out.append(stream[i + 8:i + 8 + size])
        i += 8 + size
    if i < len(stream):
        out.append(stream[i:])  # a TTY's log, or what follows the frames
    return b"".join(out).decode("utf-8", "replace")


def _rule_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


class VastfakeContainer(Client):
    """vastfake's image in a container: a context manager that starts it on
    entry and stops and removes it on exit, and a vastfake.Client of its
    control plane meanwhile.

    Options (keyword-only but ``image``): ``profile`` ("vast", "kafka" or
    "audit"), ``topics`` (["orders:3"]), ``rules`` ({"MaxGroups": 10} or
    ["MaxGroups=10"]), ``manual_clock``, ``brokers`` (1 to 16, each on its
    own mapped port), ``args`` (any flag of the binary), ``env`` (VASTFAKE_*
    variables), ``token`` (the control plane's -http-token, which the client
    then sends), ``labels``, ``docker_host`` (else DOCKER_HOST),
    ``start_timeout`` (60 s), ``stop_timeout`` (10 s), ``timeout`` and
    ``wait_timeout`` (as for vastfake.Client).
    """

    def __init__(self, image: Optional[str] = None, *, profile: Optional[str] = None, topics: Iterable[str] = (),
                 rules: Union[Mapping[str, Any], Iterable[str], None] = None, manual_clock: bool = False,
                 brokers: int = 1, args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 token: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
                 docker_host: Optional[str] = None, start_timeout: float = 60.0, stop_timeout: float = 10.0,
                 timeout: float = 10.0, wait_timeout: float = 30.0):
        super().__init__("http://unstarted/", token=token, timeout=timeout, wait_timeout=wait_timeout)
        self.image = image or os.environ.get("VASTFAKE_IMAGE") or DEFAULT_IMAGE
        self.args: List[str] = []
        if profile:
            self.args += ["-profile", profile]
        for t in topics:
            self.args += ["-topic", t]
        if isinstance(rules, Mapping):
            rule_specs = ["%s=%s" % (k, _rule_value(v)) for k, v in rules.items()]
        else:
            rule_specs = list(rules or ())
        for r in rule_specs:
            self.args += ["-rule", r]
        if manual_clock:
            self.args.append("-manual-clock")
        if not 1 <= brokers <= 16:
            raise ValueError("brokers=%r: want 1 to 16" % (brokers,))
        self.broker_count = brokers
        if brokers != 1:
            self.args += ["-brokers", str(brokers)]
        if token:
            self.args += ["-http-token", token]
        self.args += list(args)
        self.env = dict(env or {})
        self.labels = {"org.vastfake.container": "true", **dict(labels or {})}
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self._engine = _Engine(docker_host)
        self.id: Optional[str] = None
        self.bootstrap = ""
        self.addresses: List[str] = []
        self._stopped = False

    # ---- testcontainers-python's names ----

    def get_bootstrap_server(self) -> str:
        """Broker id 0's mapped "host:port", for any Kafka client."""
        return self.bootstrap

    def get_container_host_ip(self) -> str:
        """The host the mapped ports are reached on."""
        return self._engine.host

    def get_exposed_port(self, port: int) -> int:
        """The host port a container port is mapped to."""
        return self._mapped(self._inspect(), port)

    # ---- lifecycle ----

    def __enter__(self) -> "VastfakeContainer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "VastfakeContainer":
        """Create and start the container, wait for GET /healthz, advertise
        the mapped addresses; on any failure remove the container and raise
        (StartError quoting its log when it exited)."""
        if self.id is not None:
            raise VastfakeError("the container was started already: make a new VastfakeContainer")
        ports = [KAFKA_PORT + i for i in range(self.broker_count)] + [HTTP_PORT]
        body: Dict[str, Any] = {
            "Image": self.image,
            "Cmd": self.args,
            "Env": ["%s=%s" % kv for kv in self.env.items()],
            "Labels": self.labels,
            "ExposedPorts": {"%d/tcp" % p: {} for p in ports},
            "HostConfig": {"PortBindings": {"%d/tcp" % p: [{"HostIp": "", "HostPort": ""}] for p in ports}},
        }
        name = "vastfake-" + uuid.uuid4().hex[:12]
        try:
            created = self._engine.json("POST", "/containers/create?name=" + name, body)
        except DockerError as e:
            if e.status != 404:
                raise
            self._pull()  # an image the engine lacks, as Testcontainers does
            created = self._engine.json("POST", "/containers/create?name=" + name, body)
        self.id = created["Id"]
        try:
            self._engine.call("POST", "/containers/%s/start" % self.id)
            self._await_ready(ports)
        except BaseException:
            self._remove()
            raise
        return self

    def _pull(self) -> None:
        """Pull the image; raise DockerError saying how to get it when the
        engine cannot. The engine reports a failed pull either as the
        answer's status or as an "error" line of its progress stream."""
        ref, tag = self.image, ""
        if "@" not in ref and ref.rfind(":") > ref.rfind("/"):
            ref, tag = ref.rsplit(":", 1)
        query = "fromImage=" + urllib.parse.quote(ref, safe="")
        if tag:
            query += "&tag=" + urllib.parse.quote(tag, safe="")
        try:
            payload = self._engine.call("POST", "/images/create?" + query, ok=(200,))
            for line in payload.decode("utf-8", "replace").splitlines():
                try:
                    error = json.loads(line).get("error") if line.strip() else None
                except (ValueError, AttributeError):
                    error = None
                if error:
                    raise DockerError(str(error).strip())
        except DockerError as e:
            raise DockerError("image %s: the engine does not have it and could not pull it (%s): load a release's "
                              "image (docker load -i vastfake-VERSION-image-linux-amd64.tar), or name a published "
                              "one (the image argument or VASTFAKE_IMAGE)" % (self.image, e), e.status) from None

    def _inspect(self) -> Dict[str, Any]:
        return self._engine.json("GET", "/containers/%s/json" % self.id)

    @staticmethod
    def _mapped(info: Dict[str, Any], port: int) -> int:
        bindings = ((info.get("NetworkSettings") or {}).get("Ports") or {}).get("%d/tcp" % port) or []
        for b in bindings:
            if b.get("HostPort"):
                return int(b["HostPort"])
        raise DockerError("container port %d is not mapped to a host port" % port)

    def logs(self) -> str:
        """The container's log (the broker's stderr and stdout)."""
        return _demux(self._engine.call("GET", "/containers/%s/logs?stdout=1&stderr=1" % self.id))

    def _await_ready(self, ports: List[int]) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = ""
        while True:
            info = self._inspect()
            state = info.get("State") or {}
            if not state.get("Running"):
                if state.get("Status") in ("exited", "dead", "stopped") or state.get("ExitCode"):
                    log = self.logs()[-LOG_TAIL_BYTES:]
                    raise StartError("vastfake's container exited with code %s at start; its log:\n%s"
                                     % (state.get("ExitCode"), log or "(nothing)"))
            else:
                try:
                    host = self._engine.host
                    self.url = "http://%s:%d/" % (host, self._mapped(info, HTTP_PORT))
                    self.addresses = ["%s:%d" % (host, self._mapped(info, p)) for p in ports[:-1]]
                    self.health()
                    self.set_advertised(self.addresses)
                    self.bootstrap = self.addresses[0]
                    return
                except VastfakeError as e:  # not mapped or not answering yet
                    last = str(e)
            if time.monotonic() > deadline:
                raise StartError("vastfake's container did not answer GET /healthz within %gs (%s); its log:\n%s"
                                 % (self.start_timeout, last, self.logs()[-LOG_TAIL_BYTES:]))
            time.sleep(0.1)

    def _check_alive(self) -> None:
        if self._stopped:
            raise VastfakeError("the container was stopped")

    def stop(self) -> None:
        """SIGTERM (SIGKILL after stop_timeout), then remove the container.
        Safe to call twice."""
        if self._stopped or self.id is None:
            self._stopped = True
            return
        self._stopped = True
        try:
            self._engine.call("POST", "/containers/%s/stop?t=%d" % (self.id, int(self.stop_timeout)),
                              ok=(204, 304, 404))
        finally:
            self._remove()

    def _remove(self) -> None:
        self._engine.call("DELETE", "/containers/%s?force=1&v=1" % self.id, ok=(200, 204, 404))
