"""Every endpoint of the control plane has a call in the Python client.

The route table is read from the Go source (control/control.go, routes()),
every public method of Client is called against a stub that records what
it is asked, and each route must have been asked for by some method: an
endpoint added to the control plane without a client call fails here. The
other way round, a path the client asks for that no route serves fails too
(a typo, or an endpoint removed)."""

import http.server
import inspect
import os
import pathlib
import re
import threading
import urllib.parse

import pytest

from vastfake import Client

CONTROL_GO = pathlib.Path(__file__).resolve().parents[2] / "control" / "control.go"

# Routes no client method is meant to call, and why.
NOT_CALLED = {
    "GET /{$}": "the live page is HTML for people; live() reads its data from GET /live.json",
}

# Paths the client calls that the control plane on this branch may not serve
# yet, and why. An entry that the route table serves is simply covered.
NOT_SERVED_YET = {
    "GET /audit": "audit mode lands with its own branch",
    "DELETE /audit": "audit mode lands with its own branch",
}

# An argument for each required parameter of a Client method, by name.
ARGS = {
    "topic": "t", "name": "t", "group": "g", "partition": 0, "offset": 0, "n": 1, "d": "1s",
    "api": "Produce", "err": "NOT_LEADER_FOR_PARTITION", "rule": "MaxGroups", "what": "x", "cond": lambda: True,
    "broker_id": 1, "broker": 1, "transactional_id": "x", "addresses": ["127.0.0.1:9092"],
}


def read_routes():
    """The "METHOD /pattern" strings control/control.go serves: the entries
    of routes(), and any pattern handed to a mux's Handle or HandleFunc in
    the package (an endpoint registered outside the table counts too)."""
    if not CONTROL_GO.is_file():
        if os.environ.get("CI"):
            pytest.fail("%s is missing: run the tests from a vastfake checkout" % CONTROL_GO)
        pytest.skip("not in a vastfake checkout: no %s" % CONTROL_GO)
    routes = []
    m = re.search(r"\nfunc \(s \*server\) routes\(\) \[\]route \{\n(.*?)\n\}\n", CONTROL_GO.read_text(), re.S)
    if m:
        body = m.group(1)
        routes = re.findall(r'^\t\t\{"([A-Z]+ /[^"]*)",', body, re.M)
        # Every entry of the table is one line starting with {": none skipped.
        assert len(routes) == body.count('\n\t\t{"'), body
    for go in sorted(CONTROL_GO.parent.glob("*.go")):
        if not go.name.endswith("_test.go"):
            routes += re.findall(r'\.Handle(?:Func)?\("([A-Z]+ /[^"]*)"', go.read_text())
    assert len(routes) >= 20, "read only %r from %s" % (routes, CONTROL_GO)
    return routes


def pattern_regex(route):
    """A regex matching "METHOD /path" for a net/http.ServeMux pattern."""
    method, path = route.split(" ", 1)
    out = ""
    for seg in path.split("/")[1:]:
        if seg == "{$}":
            out += "/"  # exactly the path up to here
        elif seg == "":
            out += "/.*"  # a trailing slash: the subtree
        elif seg.startswith("{") and seg.endswith("...}"):
            out += "/.+"
        elif seg.startswith("{"):
            out += "/[^/]+"
        else:
            out += "/" + re.escape(seg)
    return re.compile("^%s %s$" % (re.escape(method), out))


class Recorder(http.server.BaseHTTPRequestHandler):
    seen = []

    def _any(self):
        Recorder.seen.append("%s %s" % (self.command, urllib.parse.urlparse(self.path).path))
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _any

    def log_message(self, *args):
        pass


def call_every_method(client):
    """Call every public Client method once, with arguments from ARGS."""
    for name, fn in inspect.getmembers(Client, inspect.isfunction):
        if name.startswith("_"):
            continue
        params = list(inspect.signature(fn).parameters.values())[1:]
        required = [p.name for p in params if p.default is p.empty and p.kind is not p.VAR_KEYWORD
                    and p.kind is not p.VAR_POSITIONAL]
        missing = [p for p in required if p not in ARGS]
        assert not missing, "Client.%s: add an argument for %s to ARGS" % (name, ", ".join(missing))
        try:
            got = getattr(client, name)(**{p: ARGS[p] for p in required})
            if inspect.isgenerator(got):
                next(got, None)
        except Exception:  # the stub's {} fits few answers; only the request matters
            pass


def test_every_route_has_a_client_call():
    routes = read_routes()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Recorder.seen = []
    try:
        call_every_method(Client("http://127.0.0.1:%d/" % srv.server_address[1], timeout=5, wait_timeout=0.01))
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(10)
    seen = set(Recorder.seen)
    regexes = {r: pattern_regex(r) for r in routes}

    uncalled = [r for r in routes if r not in NOT_CALLED and not any(regexes[r].match(s) for s in seen)]
    assert not uncalled, ("control/control.go serves routes the Python client has no call for; add a method "
                          "to python/vastfake/client.py (and to js/lib/client.js): %s" % ", ".join(uncalled))
    unserved = sorted(s for s in seen
                      if s not in NOT_SERVED_YET and not any(x.match(s) for x in regexes.values()))
    assert not unserved, "the Python client calls paths control/control.go does not serve: %s" % unserved
    stale = [r for r in NOT_CALLED if r not in routes]
    assert not stale, "NOT_CALLED names routes control/control.go no longer has: %s" % stale


def test_route_patterns():
    assert pattern_regex("GET /{$}").match("GET /")
    assert not pattern_regex("GET /{$}").match("GET /x")
    r = pattern_regex("POST /topics/{name}/partitions/{p}/skip")
    assert r.match("POST /topics/a%2Fb/partitions/0/skip")
    assert not r.match("GET /topics/a/partitions/0/skip") and not r.match("POST /topics/a/partitions/0")
    assert pattern_regex("GET /healthz").match("GET /healthz")
    assert pattern_regex("GET /static/").match("GET /static/a/b")
    assert pattern_regex("GET /files/{path...}").match("GET /files/a/b")
