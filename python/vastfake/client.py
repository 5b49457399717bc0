"""A typed client for vastfake's HTTP control plane, with assertions and
waits for tests.

    client = Client("http://127.0.0.1:8080/")
    client.wait_group_stable("billing", members=2)
    client.assert_committed("billing", "orders", 0, 6)
    client.assert_no_refusals()

Every call has a timeout (``timeout``, 10 s by default) and every wait a
deadline (``wait_timeout``, 30 s by default); nothing blocks forever.
Broker subclasses Client, so everything here is also a method of the broker
a test starts.
"""

from __future__ import annotations

import datetime
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

from .errors import ControlPlaneError, WaitTimeoutError
from .types import BrokerInfo, Clock, ErrorCount, GroupsCreated, Compaction, Finding, Group, Health, Rebalance, Record, Request, Topic, Transaction

__all__ = ["Client", "Duration", "go_duration"]

# The control plane is local: no HTTP(S)_PROXY from the environment applies.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

T = TypeVar("T")

#: A duration: a Go duration string ("30s", "1h30m"), seconds as a number,
#: or a datetime.timedelta.
Duration = Union[str, int, float, datetime.timedelta]


def go_duration(d: Duration) -> str:
    """Write d as a Go duration the control plane parses."""
    if isinstance(d, str):
        return d
    if isinstance(d, datetime.timedelta):
        d = d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)) or d < 0:
        raise ValueError("duration %r: want a Go duration string, seconds >= 0, or a timedelta" % (d,))
    return "%dns" % round(d * 1e9)


class Client:
    """The control plane of a running vastfake (started with -http) at
    ``url``, e.g. "http://127.0.0.1:8080/". ``token`` is sent as a bearer
    token when set (-http-token)."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 10.0, wait_timeout: float = 30.0):
        self.url = url if url.endswith("/") else url + "/"
        self.token = token
        self.timeout = timeout
        self.wait_timeout = wait_timeout

    # ---- transport ----

    def _check_alive(self) -> None:
        """Raise if the broker is known to be gone; Broker overrides it."""

    def _call(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None,
              body: Any = None, explain: Optional[Mapping[int, str]] = None) -> Tuple[Any, Mapping[str, str]]:
        """Send one request and return the decoded JSON answer and its
        headers. An error status raises ControlPlaneError with the control
        plane's message, followed by explain[status] when given; so does no
        answer within the timeout. Each request has a connection of its own
        that is closed with the answer (urllib sends Connection: close), so
        the client never holds one of the control plane's connections."""
        self._check_alive()
        url = self.url + path.lstrip("/")
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        what = "%s /%s" % (method, path.lstrip("/"))
        try:
            with _opener.open(req, timeout=self.timeout) as resp:
                raw, headers = resp.read(), resp.headers
        except urllib.error.HTTPError as e:
            raw = e.read()
            e.close()
            try:
                msg = json.loads(raw).get("error", "")
            except (ValueError, AttributeError):
                msg = raw.decode("utf-8", "replace").strip()
            if e.code == 404 and msg == "Not Found":
                # ServeMux's own 404: no such endpoint, not a missing topic or group.
                raise ControlPlaneError(
                    "%s: 404, this vastfake binary has no such endpoint; it is older than the vastfake package "
                    "(rebuild it from an up-to-date vastfake clone: go install ./cmd/vastfake, or, once the module "
                    "is published, go install github.com/vastfake/vastfake/cmd/vastfake@latest)" % what,
                    status=404, error=msg) from None
            hint = (explain or {}).get(e.code)
            raise ControlPlaneError("%s: %d %s%s" % (what, e.code, msg or e.reason, "; " + hint if hint else ""),
                                    status=e.code, error=msg) from None
        except (urllib.error.URLError, OSError) as e:
            self._check_alive()  # a dead broker explains itself better
            reason = getattr(e, "reason", e)
            raise ControlPlaneError("%s: no answer from the control plane at %s: %s" % (what, self.url, reason)) from None
        try:
            return (json.loads(raw) if raw else None), headers
        except ValueError:
            raise ControlPlaneError("%s: the answer is not JSON: %r" % (what, raw[:200])) from None

    def _get(self, path: str, **query: Any) -> Any:
        return self._call("GET", path, query)[0]

    def _post(self, path: str, body: Any = None, **query: Any) -> Any:
        return self._call("POST", path, query, body)[0]

    # ---- inspection ----

    def health(self) -> Health:
        """GET /healthz: the status and the bootstrap address."""
        return Health.from_json(self._get("healthz"))

    def rules(self) -> Dict[str, Any]:
        """GET /rules: the VAST rules in force, by rules.Rules field name."""
        return self._get("rules")

    def clock(self) -> Clock:
        """GET /clock: the broker's time and whether it is manual."""
        return Clock.from_json(self._get("clock"))

    def topics(self) -> List[Topic]:
        """GET /topics: every topic with its partitions' offsets."""
        return [Topic.from_json(t) for t in self._get("topics")]

    def topic(self, name: str) -> Topic:
        """GET /topics/{name}; ControlPlaneError (404) if there is none."""
        return Topic.from_json(self._get("topics/" + urllib.parse.quote(name, safe="")))

    def end_offset(self, topic: str, partition: int = 0) -> int:
        """The partition's high watermark: the offset the next record gets."""
        return self._partition(topic, partition).high_watermark

    def _partition(self, topic: str, partition: int):
        t = self.topic(topic)
        for p in t.partitions:
            if p.partition == partition:
                return p
        raise ControlPlaneError("topic %s has no partition %d (it has %d)" % (topic, partition, len(t.partitions)),
                                status=404)

    def records_page(self, topic: str, partition: int = 0, offset: int = 0,
                     limit: int = 100) -> Tuple[List[Record], Optional[int]]:
        """One page of GET /topics/{topic}/partitions/{p}/records: up to
        limit records from offset, and the offset of the next page (None
        when the partition has no more)."""
        path = "topics/%s/partitions/%d/records" % (urllib.parse.quote(topic, safe=""), partition)
        body, headers = self._call("GET", path, {"offset": offset, "limit": limit})
        page = [Record.from_json(r) for r in body]
        nxt = headers.get("Next-Offset")
        if nxt is not None and nxt != "":
            return page, int(nxt)
        if len(page) >= limit:
            # A binary that does not send Next-Offset: a full page may have more.
            return page, page[-1].offset + 1
        return page, None

    def iter_records(self, topic: str, partition: int = 0, offset: int = 0, page_size: int = 100) -> Iterator[Record]:
        """Every record of the partition from offset on, fetched a page at a
        time, following each answer's Next-Offset header."""
        nxt: Optional[int] = offset
        while nxt is not None:
            page, after = self.records_page(topic, partition, nxt, page_size)
            yield from page
            if after is not None and after <= nxt:
                break  # no progress: never loop on a broken answer
            nxt = after

    def records(self, topic: str, partition: int = 0, offset: int = 0) -> List[Record]:
        """Every record of the partition from offset on."""
        return list(self.iter_records(topic, partition, offset))

    def values(self, topic: str, partition: int = 0) -> List[Optional[bytes]]:
        """The values of every record of the partition, in offset order."""
        return [r.value for r in self.iter_records(topic, partition)]

    def groups(self) -> List[Group]:
        """GET /groups: every group with its members and lag."""
        return [Group.from_json(g) for g in self._get("groups")]

    def group(self, name: str) -> Group:
        """GET /groups/{name}; ControlPlaneError (404) if there is none."""
        return Group.from_json(self._get("groups/" + urllib.parse.quote(name, safe="")))

    def find_group(self, name: str) -> Optional[Group]:
        """The group, or None when the broker has no such group."""
        try:
            return self.group(name)
        except ControlPlaneError as e:
            if e.status == 404 and e.error.startswith("no group"):
                return None
            raise

    def committed(self, group: str, topic: str, partition: int = 0) -> Optional[int]:
        """The group's committed offset (the next to read), None if none."""
        g = self.find_group(group)
        return None if g is None else g.committed(topic, partition)

    def lag(self, group: str, topic: str, partition: int = 0) -> Optional[int]:
        """The high watermark minus the committed offset, None if nothing
        is committed."""
        g = self.find_group(group)
        p = None if g is None else g.partition(topic, partition)
        return None if p is None else p.lag

    def transactions(self, open_only: bool = False) -> List[Transaction]:
        """GET /transactions: every transactional id (kafka and audit
        profiles), or only those with a transaction open."""
        return [Transaction.from_json(t) for t in self._get("transactions", state="open" if open_only else None)]

    def transaction(self, transactional_id: str) -> Transaction:
        """GET /transactions/{id}; ControlPlaneError (404) if the broker does
        not know the id."""
        return Transaction.from_json(self._get("transactions/" + urllib.parse.quote(transactional_id, safe="")))

    def rebalances(self, group: Optional[str] = None) -> List[Rebalance]:
        """GET /rebalances: finished rebalances (of group), oldest first."""
        return [Rebalance.from_json(r) for r in self._get("rebalances", group=group)]

    def requests(self, rule: Optional[str] = None, api: Optional[Union[str, int]] = None,
                 limit: Optional[int] = None, broker: Optional[int] = None) -> List[Request]:
        """GET /requests: the request log, oldest first; filtered by the VAST
        rule behind a refusal, by API, by the broker id that served it, and
        to the newest limit records."""
        return [Request.from_json(r) for r in self._get("requests", rule=rule, api=api, limit=limit, broker=broker)]

    def refusals(self, rule: Optional[str] = None) -> List[Request]:
        """The requests a VAST rule refused (that rule only, when given)."""
        if rule:
            return self.requests(rule=rule)
        return [r for r in self.requests() if r.rule]

    def findings(self) -> List[Finding]:
        """GET /audit: what the broker found in the clients' behaviour that
        VAST would refuse or treat differently, with advice."""
        return self._audit()[0]

    def _audit(self) -> Tuple[List[Finding], int]:
        """GET /audit: the findings, and how many distinct ones the broker
        did not keep because it held its maximum."""
        body = self._get("audit") or {}
        return [Finding.from_json(f) for f in body.get("findings") or []], int(body.get("dropped") or 0)

    def errors(self) -> List[ErrorCount]:
        """GET /audit: the errors answered without a VAST rule, by API,
        client and error, with counts and advice (every profile)."""
        body = self._get("audit") or {}
        return [ErrorCount.from_json(e) for e in body.get("errors") or []]

    def groups_created(self) -> List[GroupsCreated]:
        """GET /audit: how many consumer groups each client created and how
        many are empty now, most first."""
        body = self._get("audit") or {}
        return [GroupsCreated.from_json(g) for g in body.get("groups") or []]

    def clear_findings(self) -> None:
        """DELETE /audit: forget every finding, e.g. between the phases of a
        test that asserts no findings for each."""
        self._call("DELETE", "audit")

    def live(self) -> Dict[str, Any]:
        """GET /live.json: topics, groups and the latest rebalances at once."""
        return self._get("live.json")

    # ---- control ----

    def clear_requests(self) -> None:
        """DELETE /requests: empty the request log."""
        self._call("DELETE", "requests")

    def inject_fault(self, api: Union[str, int], err: Union[str, int, None] = None, count: int = 0,
                     topic: Optional[str] = None, partition: Optional[int] = None,
                     partitions: Optional[List[int]] = None, group: Optional[str] = None,
                     drop_answer: bool = False, broker: Optional[int] = None) -> Dict[str, Any]:
        """POST /faults: answer requests of api ("Produce", or its key) with
        the Kafka error err ("NOT_LEADER_FOR_PARTITION", or its code), count
        times (0: until cleared), for topic (every partition unless a
        partition or partitions are given) or group, or every request of
        the API. With drop_answer (and no err) the broker handles the
        request, then closes the connection instead of answering. broker
        limits it to requests reaching that broker id. Returns the fault as
        the broker understood it."""
        if err is None and not drop_answer:
            raise ValueError("inject_fault: give err, or drop_answer=True")
        body: Dict[str, Any] = {"api": api, "count": count}
        if err is not None:
            body["err"] = err
        if drop_answer:
            body["dropAnswer"] = True
        for k, v in (("topic", topic), ("partition", partition), ("partitions", partitions), ("group", group),
                     ("broker", broker)):
            if v is not None:
                body[k] = list(v) if k == "partitions" else v
        return self._post("faults", body)

    def fail_next(self, api: Union[str, int], err: Union[str, int], n: int = 1, **scope: Any) -> Dict[str, Any]:
        """Fail the next n requests of api with err; scope as inject_fault."""
        if n < 1:
            raise ValueError("fail_next: n must be at least 1")
        return self.inject_fault(api, err, count=n, **scope)

    def clear_faults(self) -> None:
        """DELETE /faults: remove every fault and added latency."""
        self._call("DELETE", "faults")

    def latency(self, api: Union[str, int], d: Duration, broker: Optional[int] = None) -> str:
        """POST /latency: delay every request of api by d of real time (on
        broker id broker alone, if given); 0 removes it. Returns the latency
        as the broker set it ("200ms")."""
        return self._post("latency", api=api, d=go_duration(d), broker=broker)["latency"]

    def drop_connections(self, broker: Optional[int] = None) -> None:
        """POST /drop-connections: close every client connection, or those
        of broker id broker."""
        self._post("drop-connections", broker=broker)

    def failover(self) -> None:
        """POST /failover: committed offsets vanish, as in a VAST failover."""
        self._post("failover")

    def restart(self) -> None:
        """POST /restart: the listener and connections restart, data stays."""
        self._post("restart")

    def advertised(self) -> List[str]:
        """GET /advertise: the ``host:port`` Metadata hands to clients for
        each broker id, in order."""
        return self._get("advertise")["addresses"]

    def set_advertised(self, addresses: List[str]) -> List[str]:
        """PUT /advertise: Metadata hands these addresses to clients from the
        next request on, one per broker id in order; open connections stay.
        For a broker whose reachable address is known only after it starts
        (a container's mapped ports). Raises ControlPlaneError (400, changing
        nothing) for a list of the wrong length or an address without a port.
        Returns the addresses as set."""
        return self._call("PUT", "advertise", None, {"addresses": list(addresses)})[0]["addresses"]

    def brokers(self) -> List[BrokerInfo]:
        """GET /brokers: each broker id's ``id``, ``addr`` and ``down``."""
        return [BrokerInfo.from_json(b) for b in self._get("brokers")["brokers"]]

    def broker_down(self, broker_id: int) -> None:
        """POST /brokers/{id}/down: that address refuses connections and
        drops the ones it has while the other brokers serve. Raises
        ControlPlaneError (404 for no such broker, 409 if it is down already)."""
        self._post("brokers/%d/down" % broker_id)

    def fail_over_address(self, broker_id: int, blackout: Duration = 0) -> None:
        """POST /brokers/{id}/failover: a VAST virtual-IP failover of that
        address: its connections reset, it refuses connections for blackout
        on the broker's clock, then serves again, leaders unmoved.
        ControlPlaneError 404 for no such broker, 409 if it is down."""
        self._post("brokers/%d/failover" % broker_id, blackout=go_duration(blackout))

    def move_leader(self, topic: str, partition: int, broker_id: int) -> Dict[str, Any]:
        """POST /topics/{name}/partitions/{p}/leader: the partition's leader
        moves to broker_id with its leader epoch one higher; returns
        ``leader`` and ``leaderEpoch``. ControlPlaneError 404 for no such
        partition or broker."""
        return self._post("topics/%s/partitions/%d/leader" % (urllib.parse.quote(topic, safe=""), partition),
                          broker=broker_id)

    def move_coordinator(self, group: str, broker_id: int) -> None:
        """POST /groups/{name}/coordinator: the group's coordinator moves to
        broker_id. ControlPlaneError 404 for no such broker."""
        self._post("groups/%s/coordinator" % urllib.parse.quote(group, safe=""), broker=broker_id)

    def broker_up(self, broker_id: int) -> None:
        """POST /brokers/{id}/up: the broker serves again on its address.
        Raises ControlPlaneError (404 for no such broker, 409 if it is up)."""
        self._post("brokers/%d/up" % broker_id)

    def reset(self) -> None:
        """POST /reset: delete every topic and group (rules, faults and the
        request log stay)."""
        self._post("reset")

    def stale_end_offset(self, d: Duration) -> str:
        """POST /stale-end-offset: ListOffsets(latest) trails writes by d; 0
        turns it off. Returns it as the broker set it ("30s")."""
        return self._post("stale-end-offset", d=go_duration(d))["staleEndOffset"]

    def advance(self, d: Duration) -> Clock:
        """POST /clock/advance: move the manual clock (-manual-clock) by d;
        session timeouts, retention and the stale end offset follow.
        ControlPlaneError (409) on the wall clock."""
        return Clock.from_json(self._post("clock/advance", d=go_duration(d)))

    def compact(self, topic: str) -> List[Compaction]:
        """POST /topics/{topic}/compact: compact every partition of a topic
        with cleanup.policy=compact now, as Kafka's log cleaner would (each
        partition's last batch stays as it is); offsets keep their values,
        so readers see gaps. Returns what it did per partition.
        ControlPlaneError with status 404 for an unknown topic, 409 for one
        that is not compacted."""
        body = self._call("POST", "topics/%s/compact" % urllib.parse.quote(topic, safe=""), explain={
            404: "no topic %s to compact" % topic,
            409: "create %s with cleanup.policy=compact (or compact,delete) to compact it" % topic,
        })[0]
        return [Compaction.from_json(c) for c in body or []]

    def skip_offsets(self, topic: str, partition: int, n: int) -> None:
        """POST /topics/{topic}/partitions/{partition}/skip?n=: the next
        batch produced to the partition starts n offsets past its high
        watermark, leaving the gap compaction leaves (skips before one batch
        add up). ControlPlaneError with status 404 for an unknown topic or
        partition, 400 for n below 1 or a skip too far."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("skip_offsets: n must be an int, not %r" % (n,))
        if isinstance(partition, bool) or not isinstance(partition, int):
            raise TypeError("skip_offsets: partition must be an int, not %r" % (partition,))
        path = "topics/%s/partitions/%d/skip" % (urllib.parse.quote(topic, safe=""), partition)
        self._call("POST", path, {"n": n}, explain={
            404: "no partition %d of topic %s" % (partition, topic),
            400: "n is how many offsets to skip, at least 1",
        })

    # ---- assertions ----

    def assert_refused(self, rule: str, api: Optional[str] = None) -> List[Request]:
        """Assert that the VAST rule refused at least one request (of api,
        when given), and return those requests."""
        got = [r for r in self.refusals(rule) if api is None or r.api.lower() == api.lower()]
        if got:
            return got
        others = self.refusals()
        what = "rule %s" % rule + ("" if api is None else " on %s" % api)
        if others:
            raise AssertionError("no request was refused by VAST %s; the refusals were:\n%s"
                                 % (what, _lines(others)))
        raise AssertionError("no request was refused by VAST %s; no request was refused at all" % what)

    def assert_no_refusals(self) -> None:
        """Assert that no VAST rule refused any request."""
        got = self.refusals()
        if got:
            raise AssertionError("%d request%s refused by VAST rules:\n%s"
                                 % (len(got), " was" if len(got) == 1 else "s were", _lines(got)))

    def assert_no_findings(self) -> None:
        """Assert that GET /audit found nothing in the clients' behaviour."""
        got, dropped = self._audit()
        if got or dropped:
            more = "" if not dropped else " (and %d more the broker did not keep)" % dropped
            raise AssertionError("%d audit finding%s%s:\n%s" % (len(got), "" if len(got) == 1 else "s", more,
                                                                 _lines(got)))

    def assert_committed(self, group: str, topic: str, partition: int, offset: int) -> None:
        """Assert that group committed offset (the next to read) for the
        partition."""
        msg = self._committed_mismatch(group, topic, partition, offset)
        if msg:
            raise AssertionError(msg)

    def _committed_mismatch(self, group: str, topic: str, partition: int, offset: int) -> str:
        g = self.find_group(group)
        if g is None:
            names = sorted(x.name for x in self.groups())
            return "group %s does not exist (groups: %s)" % (group, ", ".join(names) or "none")
        p = g.partition(topic, partition)
        if p is None or p.committed is None:
            done = ["%s/%d=%d" % (x.topic, x.partition, x.committed) for x in g.partitions if x.committed is not None]
            return "group %s committed nothing for %s/%d (it committed: %s)" % (
                group, topic, partition, ", ".join(done) or "nothing")
        if p.committed != offset:
            return "group %s committed %s/%d at %d, want %d (high watermark %d, lag %s)" % (
                group, topic, partition, p.committed, offset, p.high_watermark, p.lag)
        return ""

    # ---- waits ----

    def wait_for(self, what: str, cond: Callable[[], Optional[T]], timeout: Optional[float] = None,
                 describe: Optional[Callable[[], str]] = None) -> T:
        """Call cond until it returns something truthy, and return that.
        After timeout seconds (wait_timeout by default) raise WaitTimeoutError
        saying what was awaited and, with describe, what was seen last."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        delay = 0.01
        while True:
            got = cond()
            if got:
                return got
            if time.monotonic() >= deadline:
                seen = ""
                if describe is not None:
                    try:
                        seen = "; last seen: " + describe()
                    except Exception as e:  # the wait failed; say so, not why describing it failed
                        seen = "; could not describe the state: %s" % e
                raise WaitTimeoutError("timed out after %gs waiting for %s%s"
                                  % (self.wait_timeout if timeout is None else timeout, what, seen))
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.1)

    def wait_group(self, group: str, state: str = "Stable", members: Optional[int] = None,
                   timeout: Optional[float] = None) -> Group:
        """Wait until group is in state with members members (any number
        when None) and, when Stable, every member holds an assignment."""

        def cond() -> Optional[Group]:
            g = self.find_group(group)
            if g is None or g.state != state or (members is not None and len(g.members) != members):
                return None
            if state == "Stable" and g.protocol_type == "consumer" and any(m.assignment is None for m in g.members):
                return None
            return g

        def describe() -> str:
            g = self.find_group(group)
            if g is None:
                return "no group %s" % group
            return "state %s, generation %d, %d member%s (%s)" % (
                g.state, g.generation, len(g.members), "" if len(g.members) == 1 else "s",
                ", ".join(m.client_id or m.member_id for m in g.members))

        want = "group %s %s" % (group, state) + ("" if members is None else " with %d members" % members)
        return self.wait_for(want, cond, timeout, describe)

    def wait_group_stable(self, group: str, members: Optional[int] = None, timeout: Optional[float] = None) -> Group:
        """Wait until group is Stable with members members (any number when
        None), each holding its assignment; return the group."""
        return self.wait_group(group, "Stable", members, timeout)

    def wait_group_reconciled(self, group: str, members: Optional[int] = None,
                              timeout: Optional[float] = None) -> Group:
        """Wait until group is Stable with members members (any number when
        None) and every member has its target assignment: for a KIP-848
        consumer group (group.protocol=consumer) every member is at the
        assignment epoch with nothing waiting to be revoked or released; for
        a classic group, Stable. Return the group."""

        def cond() -> Optional[Group]:
            g = self.find_group(group)
            if g is None or not g.reconciled or (members is not None and len(g.members) != members):
                return None
            return g

        def describe() -> str:
            g = self.find_group(group)
            if g is None:
                return "no group %s" % group
            if g.group_protocol != "consumer":
                return "classic group, state %s, %d members" % (g.state, len(g.members))
            return "state %s, group epoch %d, assignment epoch %d, members: %s" % (
                g.state, g.group_epoch, g.assignment_epoch, "; ".join(
                    "%s at epoch %d (%s) holds %s, target %s, revoking %s" % (
                        m.client_id or m.member_id, m.member_epoch, m.member_state, m.assignment,
                        m.target_assignment, m.revoking) for m in g.members) or "none")

        want = "group %s stable with every member at its target" % group + (
            "" if members is None else " (%d members)" % members)
        return self.wait_for(want, cond, timeout, describe)

    def wait_committed(self, group: str, topic: str, partition: int, offset: int,
                       timeout: Optional[float] = None) -> None:
        """Wait until group has committed offset for the partition."""
        self.wait_for("group %s to commit %s/%d at %d" % (group, topic, partition, offset),
                      lambda: not self._committed_mismatch(group, topic, partition, offset), timeout,
                      lambda: self._committed_mismatch(group, topic, partition, offset))

    def _share_mismatch(self, group: str, topic: str, partition: int, offset: int) -> str:
        g = self.find_group(group)
        if g is None or g.group_protocol != "share":
            return "no share group %s" % group
        p = g.share_partition(topic, partition)
        if p is None:
            return "share group %s has no state for %s/%d yet" % (group, topic, partition)
        if p.done(offset):
            return ""
        held = "; ".join("%d-%d held by %s, delivery %d, lock until %s" % (
            a.first_offset, a.last_offset, a.client_id or a.member_id, a.delivery_count, a.lock_deadline)
            for a in p.acquired) or "none held"
        return "share group %s's start offset on %s/%d is %d (%d available, %d archived; %s)" % (
            group, topic, partition, p.start_offset, p.available, p.archived, held)

    def assert_share_acknowledged(self, group: str, topic: str, partition: int, offset: int) -> None:
        """Assert that share group has completed every record of the
        partition up to offset: each acknowledged, or archived (rejected, or
        delivered share.delivery.count.limit times), so its share start
        offset is past offset (KIP-932; kafka and audit profiles)."""
        mismatch = self._share_mismatch(group, topic, partition, offset)
        if mismatch:
            raise AssertionError(mismatch)

    def wait_share_acknowledged(self, group: str, topic: str, partition: int, offset: int,
                                timeout: Optional[float] = None) -> None:
        """Wait until share group has completed every record of the
        partition up to offset (see assert_share_acknowledged)."""
        self.wait_for("share group %s to acknowledge %s/%d up to %d" % (group, topic, partition, offset),
                      lambda: not self._share_mismatch(group, topic, partition, offset), timeout,
                      lambda: self._share_mismatch(group, topic, partition, offset))

    def wait_refused(self, rule: str, timeout: Optional[float] = None) -> List[Request]:
        """Wait until the VAST rule has refused a request; return those."""
        return self.wait_for("a refusal by VAST rule %s" % rule, lambda: self.refusals(rule), timeout,
                             lambda: _lines(self.refusals()) or "no refusals")

    def wait_served(self, api: Union[str, int], broker: int, timeout: Optional[float] = None) -> List[Request]:
        """Wait until broker id broker has answered a request of api without
        an error, and return those: how a test sees that a client moved to
        another address (after a broker went down, a leader or coordinator
        moved, or NOT_LEADER_OR_FOLLOWER). Clear the request log first
        (clear_requests) to see only what came after."""
        def served() -> List[Request]:
            return [r for r in self.requests(api=api, broker=broker) if not r.error]

        return self.wait_for("a %s request served by broker %d" % (api, broker), served, timeout,
                             lambda: _lines(self.requests(api=api)) or "no %s requests" % api)

    def wait_end_offset(self, topic: str, partition: int, offset: int, timeout: Optional[float] = None) -> None:
        """Wait until the partition's high watermark reaches offset."""
        def cond() -> bool:
            try:
                return self.end_offset(topic, partition) >= offset
            except ControlPlaneError as e:
                if e.status == 404:
                    return False
                raise
        self.wait_for("%s/%d to reach offset %d" % (topic, partition, offset), cond, timeout,
                      lambda: "high watermark %d" % self.end_offset(topic, partition))


def _lines(items: List[Any]) -> str:
    shown = ["  " + str(x) for x in items[:20]]
    if len(items) > 20:
        shown.append("  ... and %d more" % (len(items) - 20))
    return "\n".join(shown)
