"""The vastfake pytest plugin: installed with the package (the ``pytest11``
entry point, named ``vastfake.pytest_plugin`` like this module, so that
``-p vastfake.pytest_plugin`` on top of it loads it once), or loaded from a
checkout with ``-p vastfake.pytest_plugin``.

Fixtures:

- ``vastfake``: the session's broker, reset for this test: no topics, no
  groups, no faults or latency, an empty request log (so no refusals) and
  no audit findings. When the test fails, its report gets a "vastfake
  refusals" section listing every request a VAST rule refused during the
  test and, when the broker audits rules or found something, a "vastfake
  audit findings" section listing what the audit found during the test.
- ``vastfake_broker``: the session's broker as it is (no reset), started
  once per session with the options below.
- ``kafka_bootstrap``: the session broker's bootstrap address, "host:port".
- ``vastfake_factory``: ``vastfake_factory(**options)`` starts a broker of
  its own (options as vastfake.Broker) that stops when the test ends.

Options, on the command line or in the ini file (pytest.ini, tox.ini,
setup.cfg or pyproject.toml's [tool.pytest.ini_options]):

- ``--vastfake-profile`` / ``vastfake_profile``: vast (the default: VAST's
  rules refuse), kafka (no VAST rule) or audit (VAST's rules record
  findings instead of refusing).
- ``--vastfake-rule`` (repeatable) / ``vastfake_rules`` (one per line):
  rule overrides such as MaxGroups=10.
- ``--vastfake-args`` / ``vastfake_args``: more flags for the binary, e.g.
  "-log-level debug -initial-rebalance-delay 0s"; VASTFAKE_ARGS adds more.
- ``--vastfake-bin`` / ``vastfake_bin``: the binary (else VASTFAKE_BIN, PATH,
  or go build in a vastfake checkout).
- ``--vastfake-url`` / ``vastfake_url`` / VASTFAKE_URL: the control plane of
  a vastfake that is already running (a CI service, a container, a binary
  started by hand), e.g. http://localhost:8080/. The fixtures then attach to
  it instead of starting a binary: ``vastfake_broker`` is a vastfake.Client
  of it, ``kafka_bootstrap`` the bootstrap address its GET /healthz gives,
  and ``vastfake`` resets it before each test as it does a broker it
  started; nothing is stopped at the end. VASTFAKE_HTTP_TOKEN is the token
  it sends, the variable that gives the broker its token. This is
  pytest-postgresql's ``postgresql_noproc``, and the Go fixtures'
  KAFKA_BOOTSTRAP mode, for vastfake.

Reset deletes every topic, including those a -topic flag created at start:
create a test's topics in the test.
"""

from __future__ import annotations

import os
import shlex
from typing import Callable, Iterator, List, Union

import pytest

from .broker import Broker, find_binary
from .client import Client
from .errors import ControlPlaneError, VastfakeError


#: The binary's profiles (-profile).
PROFILES = ("vast", "kafka", "audit")


def pytest_addoption(parser: "pytest.Parser") -> None:
    group = parser.getgroup("vastfake", "vastfake, the in-memory VAST Event Broker")
    group.addoption("--vastfake-profile", default=None, metavar="|".join(PROFILES),
                    help="vast (default: VAST's rules refuse), kafka (no VAST rule) or audit (VAST's rules "
                         "record findings instead of refusing)")
    group.addoption("--vastfake-rule", action="append", default=[], metavar="NAME=VALUE",
                    help="override a VAST rule, e.g. MaxGroups=10; repeatable")
    group.addoption("--vastfake-args", default=None, help="more flags for the vastfake binary")
    group.addoption("--vastfake-bin", default=None, help="the vastfake binary to run")
    group.addoption("--vastfake-url", default=None, metavar="URL",
                    help="attach to the vastfake whose control plane is at URL (else VASTFAKE_URL) instead of "
                         "starting one")
    parser.addini("vastfake_profile", "vastfake profile: vast, kafka or audit", default="")
    parser.addini("vastfake_rules", "vastfake rule overrides, NAME=VALUE, one per line", type="linelist", default=[])
    parser.addini("vastfake_args", "more flags for the vastfake binary", type="args", default=[])
    parser.addini("vastfake_bin", "the vastfake binary to run", default="")
    parser.addini("vastfake_url", "the control plane of a running vastfake to attach to", default="")


def broker_options(config: "pytest.Config") -> dict:
    """The Broker options the session's broker starts with: ini values,
    then the command line, then VASTFAKE_ARGS."""
    profile = config.getoption("vastfake_profile") or config.getini("vastfake_profile") or None
    rules: List[str] = list(config.getini("vastfake_rules")) + list(config.getoption("vastfake_rule"))
    args: List[str] = list(config.getini("vastfake_args"))
    if config.getoption("vastfake_args"):
        args += shlex.split(config.getoption("vastfake_args"))
    args += shlex.split(os.environ.get("VASTFAKE_ARGS", ""))
    binary = config.getoption("vastfake_bin") or config.getini("vastfake_bin") or None
    return {"profile": profile, "rules": rules, "args": args, "binary": binary}


def attach_url(config: "pytest.Config") -> str:
    """The control plane to attach to: --vastfake-url, else the ini's
    vastfake_url, else VASTFAKE_URL; "" to start a broker."""
    return config.getoption("vastfake_url") or config.getini("vastfake_url") or os.environ.get("VASTFAKE_URL", "")


@pytest.fixture(scope="session")
def vastfake_broker(pytestconfig: "pytest.Config") -> Iterator[Union[Broker, Client]]:
    """The session's vastfake broker, started once, as it is; or, with
    VASTFAKE_URL (--vastfake-url), a Client of the running one it names."""
    url = attach_url(pytestconfig)
    if url:
        client = Client(url, token=os.environ.get("VASTFAKE_HTTP_TOKEN") or None)
        try:
            client.bootstrap = client.health().bootstrap
        except VastfakeError as e:
            raise VastfakeError("VASTFAKE_URL=%s: no vastfake answers GET /healthz there: %s" % (url, e)) from None
        yield client
        return
    options = broker_options(pytestconfig)
    if options["binary"] is None:
        # A build from a checkout takes seconds: let its notice through.
        capman = pytestconfig.pluginmanager.getplugin("capturemanager")
        if capman is None:
            options["binary"] = find_binary()
        else:
            with capman.global_and_fixture_disabled():
                options["binary"] = find_binary()
    broker = Broker(**options)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(vastfake_broker: Union[Broker, Client]) -> str:
    """The session broker's bootstrap address, host:port."""
    return vastfake_broker.bootstrap


@pytest.fixture
def vastfake(vastfake_broker: Union[Broker, Client], request: "pytest.FixtureRequest") -> Iterator[Union[Broker, Client]]:
    """The session's broker, reset for this test."""
    b = vastfake_broker
    if not hasattr(b, "_initial_stale_end_offset"):
        b._initial_stale_end_offset = "%dns" % int(b.rules().get("StaleEndOffset") or 0)
    b.clear_faults()
    b.reset()
    b.stale_end_offset(b._initial_stale_end_offset)
    b.clear_requests()
    try:
        b.clear_findings()
    except ControlPlaneError as e:
        if e.status != 404:  # a binary without DELETE /audit has no findings either
            raise
    request.node._vastfake_broker = b
    yield b


@pytest.fixture
def vastfake_factory() -> Iterator[Callable[..., Broker]]:
    """Start brokers of the test's own, stopped when the test ends."""
    started: List[Broker] = []

    def start(**options) -> Broker:
        b = Broker(**options)
        started.append(b)
        return b.start()

    yield start
    for b in started:
        b.stop()


def _audited(broker: Broker) -> bool:
    """Whether the broker audits some rule: GET /live.json has "audit"
    then."""
    try:
        return "audit" in (broker.live() or {})
    except VastfakeError:
        return False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: "pytest.Item", call):
    outcome = yield
    report = outcome.get_result()
    broker = getattr(item, "_vastfake_broker", None)
    if broker is None or report.when != "call" or not report.failed:
        return
    try:
        refusals = broker.refusals()
        text = "\n".join(str(r) for r in refusals) if refusals else "no request was refused by a VAST rule"
    except VastfakeError as e:
        text = "could not read the request log: %s" % e
    report.sections.append(("vastfake refusals", text))
    try:
        findings, dropped = broker._audit()
    except ControlPlaneError as e:
        if e.status == 404:  # a binary without GET /audit: nothing to say
            return
        report.sections.append(("vastfake audit findings", "could not read the audit findings: %s" % e))
        return
    except VastfakeError as e:
        report.sections.append(("vastfake audit findings", "could not read the audit findings: %s" % e))
        return
    if findings or dropped:
        text = "\n".join(str(f) for f in findings)
        if dropped:
            text += "\n(and %d more the broker did not keep)" % dropped
        report.sections.append(("vastfake audit findings", text.strip("\n")))
    elif _audited(broker):
        report.sections.append(("vastfake audit findings", "the audit found nothing"))
