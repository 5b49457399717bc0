"""The control plane's answers as typed, read-only Python objects.

Every class is a frozen dataclass built from the JSON the binary serves
(see docs/control-plane.md), with snake_case names. Each
keeps the JSON it came from in ``raw``, so a field a newer binary adds is
readable before this package names it.
"""

from __future__ import annotations

import base64
import datetime
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "BrokerInfo", "Clock", "Compaction", "ErrorCount", "FetchPartition", "Finding", "Group", "GroupsCreated", "GroupPartition", "Health", "Member", "Partition",
    "Rebalance", "RebalanceMember", "Record", "Request", "Topic", "parse_time",
]

_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def parse_time(s: Optional[str]) -> Optional[datetime.datetime]:
    """Parse an RFC 3339 time as Go writes it (up to nanoseconds, which are
    cut to microseconds) into an aware datetime; None for None or ""."""
    if not s:
        return None
    m = _TIME.match(s)
    if not m:
        raise ValueError("not an RFC 3339 time: %r" % s)
    frac = (m.group(2) or "")[:6].ljust(6, "0")
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat("%s.%s%s" % (m.group(1), frac, zone))


def _bytes(text: Optional[str], b64: Optional[str]) -> Optional[bytes]:
    if b64:
        return base64.b64decode(b64)
    if text is None:
        return None
    return text.encode("utf-8")


@dataclass(frozen=True)
class Health:
    status: str
    bootstrap: str
    #: The Kafka release the broker follows (-kafka-version), e.g. "4.3".
    kafka_version: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Health":
        return cls(status=d.get("status", ""), bootstrap=d.get("bootstrap", ""),
                   kafka_version=d.get("kafkaVersion", ""), raw=d)


@dataclass(frozen=True)
class Clock:
    """The broker's time and whether it is the manual clock (-manual-clock)."""
    now: datetime.datetime
    manual: bool
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Clock":
        return cls(now=parse_time(d["now"]), manual=bool(d.get("manual")), raw=d)


@dataclass(frozen=True)
class Partition:
    """One partition of GET /topics: its offsets, its bytes, the broker id
    that leads it with the leader epoch (both move with move_leader and with
    an election), and its replicas and in-sync replicas (broker ids)."""
    partition: int
    log_start_offset: int
    high_watermark: int
    bytes: int
    leader: int = 0
    leader_epoch: int = 0
    replicas: Tuple[int, ...] = ()
    isr: Tuple[int, ...] = ()


@dataclass(frozen=True)
class BrokerInfo:
    """One broker id of GET /brokers: the address it listens on, the one
    Metadata hands to clients, and whether it is down. Indexing by the JSON
    name (``b["addr"]``) still works, as it did when brokers() returned
    dicts."""
    id: int
    addr: str
    down: bool
    raw: Dict[str, Any] = field(repr=False, compare=False)
    advertised: str = ""

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "BrokerInfo":
        return cls(id=d["id"], addr=d.get("addr", ""), down=bool(d.get("down")), raw=d,
                   advertised=d.get("advertised", ""))


@dataclass(frozen=True)
class Topic:
    name: str
    id: str
    configs: Dict[str, str]
    partitions: List[Partition]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Topic":
        return cls(name=d["name"], id=d.get("id", ""), configs=dict(d.get("configs") or {}),
                   partitions=[Partition(partition=p["partition"], log_start_offset=p["logStartOffset"],
                                         high_watermark=p["highWatermark"], bytes=p.get("bytes", 0),
                                         leader=p.get("leader", 0), leader_epoch=p.get("leaderEpoch", 0),
                                         replicas=tuple(p.get("replicas") or ()), isr=tuple(p.get("isr") or ()))
                               for p in d.get("partitions") or []],
                   raw=d)


@dataclass(frozen=True)
class Compaction:
    """What POST /topics/{name}/compact did to one partition."""
    partition: int
    compacted: bool  # whether the log changed
    cleaned_to: int  # the offset the cleanable range ended at; the tail from it on stays as it is
    records_removed: int
    tombstones_removed: int  # of records_removed, the tombstones past their delete horizon
    bytes_before: int  # of the cleanable range
    bytes_after: int
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Compaction":
        return cls(partition=d["partition"], compacted=bool(d.get("compacted")), cleaned_to=d.get("cleanedTo", 0),
                   records_removed=d.get("recordsRemoved", 0), tombstones_removed=d.get("tombstonesRemoved", 0),
                   bytes_before=d.get("bytesBefore", 0), bytes_after=d.get("bytesAfter", 0), raw=d)


@dataclass(frozen=True)
class Record:
    """A record as the broker stores it. Keys, values and header values are
    bytes (None for a null one), whether the JSON carried them as text or
    as base64."""
    offset: int
    timestamp_ms: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: List[Tuple[str, Optional[bytes]]]
    log_append_time: bool
    compressed: bool
    raw: Dict[str, Any] = field(repr=False, compare=False)
    # The producer id of an idempotent or transactional producer's record
    # (0 for others); "commit" or "abort" for a transaction marker, which
    # consumers never see; "committed", "aborted" or "open" for a record
    # written in a transaction.
    producer_id: int = 0
    marker: str = ""
    transaction: str = ""

    @property
    def timestamp(self) -> datetime.datetime:
        """The record's timestamp as an aware UTC datetime."""
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return epoch + datetime.timedelta(milliseconds=self.timestamp_ms)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Record":
        return cls(offset=d["offset"], timestamp_ms=d.get("timestampMs", 0),
                   key=_bytes(d.get("key"), d.get("keyBase64")),
                   value=_bytes(d.get("value"), d.get("valueBase64")),
                   headers=[(h["key"], _bytes(h.get("value"), h.get("valueBase64"))) for h in d.get("headers") or []],
                   log_append_time=bool(d.get("logAppendTime")), compressed=bool(d.get("compressed")), raw=d,
                   producer_id=d.get("producerId", 0), marker=d.get("marker", ""), transaction=d.get("transaction", ""))


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str
    client_id: str
    client_host: str
    # topic -> partitions; None before a rebalance hands one out. For a
    # KIP-848 member (group.protocol=consumer), what it may consume now.
    assignment: Optional[Dict[str, List[int]]]
    # A KIP-848 member's epoch, its reconciliation state (STABLE,
    # UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), its target assignment
    # and the partitions it must still revoke; 0, "", None for a classic
    # member.
    member_epoch: int = 0
    member_state: str = ""
    target_assignment: Optional[Dict[str, List[int]]] = None
    revoking: Optional[Dict[str, List[int]]] = None


@dataclass(frozen=True)
class GroupPartition:
    topic: str
    partition: int
    committed: Optional[int]  # None when the group committed nothing here
    metadata: str
    high_watermark: int
    lag: Optional[int]  # high watermark minus committed; None when nothing is committed
    owner_member_id: str
    owner_client_id: str


@dataclass(frozen=True)
class AcquiredRecords:
    """Consecutive records a share group member holds (KIP-932)."""
    first_offset: int
    last_offset: int
    member_id: str
    client_id: str
    delivery_count: int
    # When the acquisition lock ends, on the broker's clock: then the
    # records become available to any member again.
    lock_deadline: datetime.datetime


@dataclass(frozen=True)
class SharePartition:
    """A share group's state of one partition (KIP-932)."""
    topic: str
    partition: int
    # Every record before start_offset was acknowledged or archived.
    start_offset: int
    end_offset: int
    high_watermark: int
    in_flight: int
    available: int
    acquired: List[AcquiredRecords]
    acknowledged: int
    archived: int
    # Records up to the high watermark not yet acknowledged or archived.
    lag: int

    def done(self, offset: int) -> bool:
        """Whether every record up to offset completed delivery."""
        return self.start_offset > offset


@dataclass(frozen=True)
class Group:
    name: str
    state: str
    protocol_type: str
    protocol: str
    generation: int
    leader: str
    members: List[Member]
    partitions: List[GroupPartition]
    raw: Dict[str, Any] = field(repr=False, compare=False)
    # The broker id coordinating the group (0 with one broker).
    coordinator: int = 0
    # "classic", or "consumer" for a KIP-848 consumer group
    # (group.protocol=consumer), which has a group epoch and the epoch of
    # its target assignment.
    group_protocol: str = "classic"
    group_epoch: int = 0
    assignment_epoch: int = 0
    # True once the group is Stable and every member has its target
    # assignment (nothing waiting to be revoked or released).
    reconciled: bool = False
    # A share group's (group_protocol "share") partitions with share state.
    share_partitions: List[SharePartition] = field(default_factory=list)

    def share_partition(self, topic: str, partition: int) -> Optional[SharePartition]:
        """A share group's state of one partition, None if it has none."""
        for p in self.share_partitions:
            if p.topic == topic and p.partition == partition:
                return p
        return None

    def partition(self, topic: str, partition: int) -> Optional[GroupPartition]:
        """The group's view of one partition, None if it neither committed
        nor was assigned it."""
        for p in self.partitions:
            if p.topic == topic and p.partition == partition:
                return p
        return None

    def committed(self, topic: str, partition: int) -> Optional[int]:
        """The committed offset (the next one to read), None if none."""
        p = self.partition(topic, partition)
        return None if p is None else p.committed

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Group":
        return cls(
            name=d["name"], state=d.get("state", ""), protocol_type=d.get("protocolType", ""),
            protocol=d.get("protocol", ""), generation=d.get("generation", 0), leader=d.get("leader", ""),
            coordinator=d.get("coordinator", 0),
            group_protocol=d.get("groupProtocol") or "classic", group_epoch=d.get("groupEpoch", 0),
            assignment_epoch=d.get("assignmentEpoch", 0), reconciled=bool(d.get("reconciled")),
            members=[Member(member_id=m.get("memberId", ""), instance_id=m.get("instanceId", ""),
                            client_id=m.get("clientId", ""), client_host=m.get("clientHost", ""),
                            assignment=m.get("assignment"), member_epoch=m.get("memberEpoch", 0),
                            member_state=m.get("memberState", ""), target_assignment=m.get("targetAssignment"),
                            revoking=m.get("revoking"))
                     for m in d.get("members") or []],
            share_partitions=[SharePartition(
                topic=p["topic"], partition=p["partition"], start_offset=p.get("startOffset", 0),
                end_offset=p.get("endOffset", 0), high_watermark=p.get("highWatermark", 0), in_flight=p.get("inFlight", 0),
                available=p.get("available", 0),
                acquired=[AcquiredRecords(first_offset=a["firstOffset"], last_offset=a["lastOffset"],
                                          member_id=a.get("memberId", ""), client_id=a.get("clientId", ""),
                                          delivery_count=a.get("deliveryCount", 0), lock_deadline=parse_time(a["lockDeadline"]))
                          for a in p.get("acquired") or []],
                acknowledged=p.get("acknowledged", 0), archived=p.get("archived", 0), lag=p.get("lag", 0))
                for p in d.get("sharePartitions") or []],
            partitions=[GroupPartition(topic=p["topic"], partition=p["partition"], committed=p.get("committed"),
                                       metadata=p.get("metadata", ""), high_watermark=p.get("highWatermark", 0),
                                       lag=p.get("lag"), owner_member_id=p.get("ownerMemberId", ""),
                                       owner_client_id=p.get("ownerClientId", ""))
                        for p in d.get("partitions") or []],
            raw=d)


@dataclass(frozen=True)
class Transaction:
    """A transactional id as GET /transactions shows it (kafka and audit
    profiles)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str  # Kafka's: Empty, Ongoing, CompleteCommit or CompleteAbort
    timeout_ms: int
    start: Optional[datetime.datetime]  # of the open transaction; None when none is open
    partitions: List[Tuple[str, int]]
    groups: List[str]
    committed: int
    aborted: int
    timed_out: int
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Transaction":
        return cls(transactional_id=d["transactionalId"], producer_id=d.get("producerId", -1),
                   producer_epoch=d.get("producerEpoch", -1), state=d.get("state", ""),
                   timeout_ms=d.get("timeoutMs", 0), start=parse_time(d.get("start")),
                   partitions=[(p["topic"], p["partition"]) for p in d.get("partitions") or []],
                   groups=list(d.get("groups") or []), committed=d.get("committed", 0),
                   aborted=d.get("aborted", 0), timed_out=d.get("timedOut", 0), raw=d)


@dataclass(frozen=True)
class RebalanceMember:
    member_id: str
    client_id: str
    assignment: Optional[Dict[str, List[int]]]


@dataclass(frozen=True)
class Rebalance:
    time: Optional[datetime.datetime]
    group: str
    generation: int
    state: str  # Stable, or Empty when no member rejoined
    protocol: str
    members: List[RebalanceMember]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Rebalance":
        return cls(time=parse_time(d.get("time")), group=d["group"], generation=d.get("generation", 0),
                   state=d.get("state", ""), protocol=d.get("protocol", ""),
                   members=[RebalanceMember(member_id=m.get("memberId", ""), client_id=m.get("clientId", ""),
                                            assignment=m.get("assignment"))
                            for m in d.get("members") or []],
                   raw=d)


@dataclass(frozen=True)
class FetchPartition:
    """What one partition of a Fetch returned, as the request log keeps it
    when the broker runs with -fetch-detail."""
    topic: str
    partition: int
    fetch_offset: int
    records: int
    bytes: int
    high_watermark: int
    error_code: int
    error: str

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "FetchPartition":
        return cls(topic=d.get("topic", ""), partition=d.get("partition", 0), fetch_offset=d.get("fetchOffset", -1),
                   records=d.get("records", 0), bytes=d.get("bytes", 0), high_watermark=d.get("highWatermark", -1),
                   error_code=d.get("errorCode", 0), error=d.get("error", ""))


@dataclass(frozen=True)
class Request:
    """One record of the request log: what a client asked and the answer."""
    time: Optional[datetime.datetime]
    api: str
    version: int
    client_id: str
    error_code: int
    error: str  # the Kafka error's name, "" when none
    rule: str  # the VAST rule (a rules.Rules field) behind a refusal, "" when none
    fault: bool
    user: str
    denied: str
    closed: bool
    message: str  # what the client was told with the error
    repeats: int
    raw: Dict[str, Any] = field(repr=False, compare=False)
    broker: int = 0  # the broker id that served it
    # The audited rule of the first finding the request caused (the audit
    # profile), "" when none; rules and findings list every rule the
    # request broke when there was more than one.
    finding: str = ""
    rules: Tuple[str, ...] = ()
    findings: Tuple[str, ...] = ()
    # For a Fetch when the broker runs with -fetch-detail: what each
    # partition returned (at most 64; raw["fetch"]["omitted"] counts more).
    fetch: Tuple[FetchPartition, ...] = ()

    def __str__(self) -> str:
        s = "%s v%d from client %r" % (self.api, self.version, self.client_id)
        if self.error:
            s += ": %s" % self.error
        if self.rule:
            s += " by VAST rule %s" % self.rule
        if self.message:
            s += " (%s)" % self.message
        if self.denied:
            s += " denied: %s" % self.denied
        if self.fault:
            s += " [injected fault]"
        if self.closed:
            s += " [connection closed]"
        return s

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Request":
        return cls(time=parse_time(d.get("time")), api=d.get("api", ""), version=d.get("version", 0),
                   client_id=d.get("clientId", ""), error_code=d.get("errorCode", 0), error=d.get("error", ""),
                   rule=d.get("rule", ""), fault=bool(d.get("fault")), user=d.get("user", ""),
                   denied=d.get("denied", ""), closed=bool(d.get("closed")), message=d.get("message", ""),
                   repeats=d.get("repeats", 0), raw=d, broker=d.get("broker", 0), finding=d.get("finding", ""),
                   rules=tuple(d.get("rules") or ()), findings=tuple(d.get("findings") or ()),
                   fetch=tuple(FetchPartition.from_json(p) for p in (d.get("fetch") or {}).get("partitions") or ()))


@dataclass(frozen=True)
class Finding:
    """One finding of GET /audit: a client behaviour that VAST would refuse
    or that works differently on VAST, with advice."""
    rule: str
    kind: str
    source: str
    client_id: str
    client_software: str
    client_version: str
    topic: str
    group: str
    count: int
    api: str
    first: Optional[datetime.datetime]
    last: Optional[datetime.datetime]
    advice: str
    detail: str
    raw: Dict[str, Any] = field(repr=False, compare=False)

    def __str__(self) -> str:
        who = self.client_id or "?"
        if self.client_software:
            who += " (%s %s)" % (self.client_software, self.client_version)
        where = ", ".join(x for x in (self.topic and "topic " + self.topic, self.group and "group " + self.group) if x)
        s = "%s [%s] from %s" % (self.rule, self.kind, who)
        if self.api:
            s += " in " + self.api
        if where:
            s += " on " + where
        s += ", %d time%s" % (self.count, "" if self.count == 1 else "s")
        if self.detail:
            s += ": " + self.detail
        if self.advice:
            s += " -- " + self.advice
        return s

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Finding":
        def t(v: Any) -> Optional[datetime.datetime]:
            try:
                return parse_time(v) if isinstance(v, str) else None
            except ValueError:
                return None
        return cls(rule=d.get("rule", ""), kind=d.get("kind", ""), source=d.get("source", ""),
                   client_id=d.get("clientId", ""), client_software=d.get("clientSoftware", ""),
                   client_version=d.get("clientVersion", ""), topic=d.get("topic", ""), group=d.get("group", ""),
                   count=d.get("count", 0), api=d.get("api", ""), first=t(d.get("first")), last=t(d.get("last")),
                   advice=d.get("advice", ""), detail=d.get("detail", ""), raw=d)


def _time_or_none(v: Any) -> Optional[datetime.datetime]:
    try:
        return parse_time(v) if isinstance(v, str) else None
    except ValueError:
        return None


@dataclass(frozen=True)
class ErrorCount:
    """One row of GET /audit's errors: how often one client got one error
    from one API where no VAST rule was the cause (a topic that does not
    exist, a version the broker does not serve), with advice. A report with
    no findings but errors here is not an all-clear."""
    api: str
    error: str
    code: int
    client_id: str
    client_software: str
    client_version: str
    topic: str  # the topic the first answer's error was about, if any
    group: str  # the group, if any
    retriable: bool  # clients retry it on their own
    routine: bool  # a protocol step every client recovers from: never a failure
    finding: str  # the rule of the finding that already explains it, or ""
    count: int
    first: Optional[datetime.datetime]
    last: Optional[datetime.datetime]
    detail: str
    advice: str
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ErrorCount":
        return cls(api=d.get("api", ""), error=d.get("error", ""), code=d.get("code", 0),
                   client_id=d.get("clientId", ""), client_software=d.get("clientSoftware", ""),
                   client_version=d.get("clientVersion", ""), topic=d.get("topic", ""), group=d.get("group", ""),
                   retriable=bool(d.get("retriable")), routine=bool(d.get("routine")), finding=d.get("finding", ""),
                   count=d.get("count", 0), first=_time_or_none(d.get("first")), last=_time_or_none(d.get("last")),
                   detail=d.get("detail", ""), advice=d.get("advice", ""), raw=d)


@dataclass(frozen=True)
class GroupsCreated:
    """One line of GET /audit's group forecast: how many consumer groups a
    client created and how many of them are empty now (VAST keeps at most
    256 and never expires their offsets)."""
    client_id: str
    client_software: str
    client_version: str
    created: int
    empty: int
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "GroupsCreated":
        return cls(client_id=d.get("clientId", ""), client_software=d.get("clientSoftware", ""),
                   client_version=d.get("clientVersion", ""), created=d.get("created", 0), empty=d.get("empty", 0),
                   raw=d)
