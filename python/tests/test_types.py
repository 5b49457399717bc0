"""The typed answers cannot drift from the HTTP answers they are built from.

For each typed class, the JSON keys of a real answer of the control plane
(camelCase) must be the class's fields (snake_case), so that a field the
binary adds fails here until the class carries it, and a field a class
names that the binary no longer sends fails too."""

import dataclasses
import pathlib
import re

from confluent_kafka import Consumer, Producer

import vastfake
from vastfake import BrokerInfo, ErrorCount, FetchPartition, Finding, GroupsCreated, Partition, Request, Topic

# Fields a class keeps that are not JSON keys of its answer.
NOT_JSON = {"raw"}

ROOT = pathlib.Path(__file__).resolve().parents[2]


def go_tags(path, struct):
    """The JSON names of a Go struct's fields, in snake_case: every key the
    binary can send, omitempty ones included."""
    src = (ROOT / path).read_text()
    m = re.search(r"\ntype %s struct \{\n(.*?)\n\}\n" % struct, src, re.S)
    assert m, "no struct %s in %s" % (struct, path)
    return {snake(t) for t in re.findall(r'json:"([^",]+)', m.group(1)) if t != "-"}


def snake(name):
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def fields(cls):
    return {f.name for f in dataclasses.fields(cls)} - NOT_JSON


def keys(objs):
    """The union of the JSON keys of objs, in snake_case."""
    out = set()
    for o in objs:
        out |= {snake(k) for k in o}
    return out


def get(b, path):
    """The decoded JSON of GET path, as the client receives it."""
    return b._get(path)


def test_typed_fields_match_the_http_answers(vastfake_bin):
    with vastfake.Broker(profile="audit", topics=["orders:2"], brokers=2, binary=vastfake_bin) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        p.produce("orders", value=b"v", partition=0)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "typed", "auto.offset.reset": "earliest",
                      "partition.assignment.strategy": "cooperative-sticky"})
        c.subscribe(["orders"])
        msg = None
        for _ in range(60):
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                break
        assert msg is not None and not msg.error()
        c.close()
        del p, c

        topics = get(b, "topics")
        assert fields(Topic) == keys(topics)
        assert fields(Partition) == keys(pt for t in topics for pt in t["partitions"])
        brokers = get(b, "brokers")["brokers"]
        ids = {x["id"] for x in brokers}
        assert {pt.leader for t in b.topics() for pt in t.partitions} <= ids
        assert {pt.leader_epoch for t in b.topics() for pt in t.partitions} == {0}

        assert fields(BrokerInfo) == keys(brokers)
        typed = b.brokers()
        assert all(isinstance(x, BrokerInfo) for x in typed) and typed[0]["addr"] == typed[0].addr

        audit = get(b, "audit")
        findings = audit["findings"]
        assert findings, "the consumer's cooperative-sticky and the producer's idempotence are findings"
        assert fields(Finding) == keys(findings)
        assert audit["groups"], "the consumer created its group"
        assert fields(GroupsCreated) == keys(audit["groups"])
        assert [g.created for g in b.groups_created()] == [1]
        assert all(isinstance(e, ErrorCount) for e in b.errors())

        requests = get(b, "requests")
        # A request record leaves out the keys that are empty (omitempty):
        # every key any record has must be a field, and every key the Go
        # view can send.
        assert keys(requests) <= fields(Request), keys(requests) - fields(Request)


def test_typed_fields_match_the_go_views():
    """Every key the binary's views can send, omitempty ones included."""
    assert fields(Request) == go_tags("control/views.go", "requestView")
    assert fields(Partition) == go_tags("control/views.go", "partitionView")
    assert fields(Topic) == go_tags("control/views.go", "topicView")
    assert fields(BrokerInfo) == go_tags("control/control.go", "brokerView")
    assert fields(Finding) == go_tags("broker/audit.go", "Finding")
    assert fields(FetchPartition) == go_tags("control/views.go", "fetchPartitionView")
    assert fields(ErrorCount) == go_tags("broker/auditerrors.go", "ErrorCount")
    assert fields(GroupsCreated) == go_tags("broker/groupforecast.go", "GroupsCreated")
