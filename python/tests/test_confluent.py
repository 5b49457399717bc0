"""The package with the Confluent Python client (librdkafka): a consumer
group sharing a topic, a refusal by a VAST rule, retention driven by the
broker's clock, and injected faults, each checked through the control
plane.

librdkafka 2.0.2 (Debian 12) needs enable.idempotence false against the
VAST profile, and a consumer must be closed before the broker is reset (a
close after a reset can hang, confluentinc/librdkafka#4187): every consumer here
is closed within its test."""

import socket
import time

import pytest

import vastfake
from vastfake import ControlPlaneError

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def create_topic(bootstrap, name, partitions=1, config=None):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    admin.create_topics([topic])[name].result(30)


def producer(bootstrap, **extra):
    conf = {"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 0,
            "log.connection.close": False}
    conf.update({k.replace("_", "."): v for k, v in extra.items()})
    return Producer(conf)


def consumer(bootstrap, group, client_id):
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})


def test_consumer_group_shares_a_topic(vastfake):
    create_topic(vastfake.bootstrap, "orders", partitions=4)
    p = producer(vastfake.bootstrap)
    for i in range(40):
        p.produce("orders", key=b"customer-%d" % (i % 7), value=b"order-%d" % i, partition=i % 4)
    assert p.flush(30) == 0
    for part in range(4):
        vastfake.wait_end_offset("orders", part, 10)

    members = [consumer(vastfake.bootstrap, "billing", "billing-%d" % n) for n in range(2)]
    try:
        for c in members:
            c.subscribe(["orders"])
        seen = {}
        deadline = time.monotonic() + 60
        # Both members poll until the group settled with two members and
        # every record was read; the group's state comes from the broker.
        while True:
            for c in members:
                msg = c.poll(0.05)
                if msg is not None and not msg.error():
                    seen[(msg.partition(), msg.offset())] = msg.value()
            group = vastfake.find_group("billing")
            if len(seen) == 40 and group is not None and group.state == "Stable" and len(group.members) == 2 \
                    and all(len(c.assignment()) == 2 for c in members):
                break
            assert time.monotonic() < deadline, "group: %r, %d records read" % (group, len(seen))
        for c in members:
            c.commit(asynchronous=False)

        group = vastfake.wait_group_stable("billing", members=2)
        owned = sorted(p for m in group.members for p in m.assignment["orders"])
        assert owned == [0, 1, 2, 3]
        assert {m.client_id for m in group.members} == {"billing-0", "billing-1"}
        for part in range(4):
            vastfake.assert_committed("billing", "orders", part, 10)
            assert vastfake.lag("billing", "orders", part) == 0
        assert sorted(v for v in seen.values()) == sorted(b"order-%d" % i for i in range(40))
        assert any(len(r.members) == 2 for r in vastfake.rebalances("billing"))
        assert [r.value for r in vastfake.records("orders", 1)] == [b"order-%d" % i for i in range(1, 40, 4)]
        assert vastfake.records("orders", 1)[0].key == b"customer-1"
    finally:
        for c in members:
            c.close()
    vastfake.assert_no_refusals()


def test_vast_refuses_compressed_batches(vastfake):
    create_topic(vastfake.bootstrap, "clicks")
    errors = []
    p = producer(vastfake.bootstrap, compression_type="gzip", message_send_max_retries=0)
    p.produce("clicks", value=b"x" * 1000, on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None, errors

    refused = vastfake.assert_refused("NoCompression", api="Produce")
    assert refused[0].error, refused[0]
    with pytest.raises(AssertionError, match=r"1 request was refused by VAST rules:\n  Produce v\d+ .* "
                                             r"by VAST rule NoCompression"):
        vastfake.assert_no_refusals()
    with pytest.raises(AssertionError, match="no request was refused by VAST rule MaxGroups; the refusals were"):
        vastfake.assert_refused("MaxGroups")


def test_retention_follows_the_broker_clock(vastfake_factory):
    b = vastfake_factory(manual_clock=True, topics=["events:1:retention.ms=60000"])
    p = producer(b.bootstrap)
    for i in range(3):
        p.produce("events", value=b"event-%d" % i)
    assert p.flush(30) == 0
    del p  # destroyed now, not after the broker stops (it would log its reconnects)
    assert b.end_offset("events", 0) == 3

    b.advance("30s")  # younger than retention.ms: kept
    assert [r.value for r in b.records("events")] == [b"event-0", b"event-1", b"event-2"]

    b.advance("2m")
    b.wait_for("retention to delete the records",
               lambda: b.topic("events").partitions[0].log_start_offset == 3,
               describe=lambda: repr(b.topic("events").partitions[0]))
    assert b.records("events") == []


def test_injected_faults_and_failover(vastfake):
    create_topic(vastfake.bootstrap, "payments")
    fault = vastfake.inject_fault("Produce", "NOT_LEADER_FOR_PARTITION", count=2, topic="payments")
    assert fault["topic"] == "payments" and not fault["partitions"]  # every partition

    delivered = []
    p = producer(vastfake.bootstrap, retry_backoff_ms=10)
    p.produce("payments", value=b"p-1", on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(30) == 0
    assert delivered == [None]  # librdkafka retried through both faults
    faulted = [r for r in vastfake.requests(api="Produce") if r.fault]
    assert len(faulted) == 2 and all(r.error == "NOT_LEADER_FOR_PARTITION" for r in faulted)
    assert vastfake.values("payments") == [b"p-1"]

    c = consumer(vastfake.bootstrap, "ledger", "ledger-1")
    try:
        c.subscribe(["payments"])
        msg = None
        deadline = time.monotonic() + 30
        while msg is None or msg.error():
            assert time.monotonic() < deadline, "no record within 30 s"
            msg = c.poll(0.1)
        c.commit(message=msg, asynchronous=False)
        vastfake.wait_committed("ledger", "payments", 0, 1)
    finally:
        c.close()

    vastfake.failover()  # VAST does not replicate committed offsets
    assert vastfake.committed("ledger", "payments", 0) is None
    with pytest.raises(AssertionError, match="group ledger committed nothing for payments/0"):
        vastfake.assert_committed("ledger", "payments", 0, 1)

    vastfake.drop_connections()
    vastfake.restart()
    p.produce("payments", value=b"p-2", on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(30) == 0 and delivered[-1] is None  # reconnected after both


def test_fault_error_reaches_the_client(vastfake):
    create_topic(vastfake.bootstrap, "audit")
    vastfake.fail_next("Produce", "TOPIC_AUTHORIZATION_FAILED")
    errors = []
    p = producer(vastfake.bootstrap, message_send_max_retries=0)
    p.produce("audit", value=b"a", on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors[0]
    vastfake.assert_no_refusals()  # a fault is not a VAST rule


def test_compaction_and_offset_gaps(vastfake):
    """A compacted topic with a gap made by skip_offsets, compacted through
    the control plane: the records left keep their offsets, and a consumer
    reads across both gaps."""
    create_topic(vastfake.bootstrap, "accounts", config={"cleanup.policy": "compact"})
    create_topic(vastfake.bootstrap, "plain")
    p = producer(vastfake.bootstrap)

    def send(*kvs):  # one batch, flushed before the next
        for k, v in kvs:
            p.produce("accounts", key=k, value=v, partition=0)
        assert p.flush(30) == 0

    send((b"alice", b"10"), (b"bob", b"20"))  # offsets 0, 1
    vastfake.skip_offsets("accounts", 0, 5)  # the next batch starts at 2 + 5
    send((b"alice", b"15"))  # offset 7: alice's newest
    send((b"carol", b"30"))  # offset 8: the last batch, which compaction leaves alone
    assert vastfake.end_offset("accounts", 0) == 9
    assert [r.offset for r in vastfake.records("accounts")] == [0, 1, 7, 8]

    (done,) = vastfake.compact("accounts")
    assert (done.partition, done.compacted, done.records_removed, done.tombstones_removed) == (0, True, 1, 0)
    assert done.cleaned_to == 8 and done.bytes_after < done.bytes_before
    assert [(r.offset, r.key, r.value) for r in vastfake.records("accounts")] == \
        [(1, b"bob", b"20"), (7, b"alice", b"15"), (8, b"carol", b"30")]
    assert vastfake.end_offset("accounts", 0) == 9  # offsets keep their values
    (again,) = vastfake.compact("accounts")
    assert not again.compacted and again.records_removed == 0

    c = Consumer({"bootstrap.servers": vastfake.bootstrap, "group.id": "reader", "enable.auto.commit": False})
    try:
        c.assign([confluent_kafka.TopicPartition("accounts", 0, confluent_kafka.OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 3:
            assert time.monotonic() < deadline, "read %r within 30 s" % got
            msg = c.poll(0.1)
            if msg is not None and not msg.error():
                got.append((msg.offset(), msg.key(), msg.value()))
        assert got == [(1, b"bob", b"20"), (7, b"alice", b"15"), (8, b"carol", b"30")]
    finally:
        c.close()

    with pytest.raises(ControlPlaneError, match="404 .*no topic nope to compact") as e:
        vastfake.compact("nope")
    assert e.value.status == 404
    with pytest.raises(ControlPlaneError,
                       match="409 .*create plain with cleanup.policy=compact") as e:
        vastfake.compact("plain")
    assert e.value.status == 409
    with pytest.raises(ControlPlaneError, match="404 .*no partition 3 of topic accounts") as e:
        vastfake.skip_offsets("accounts", 3, 1)
    assert e.value.status == 404
    with pytest.raises(ControlPlaneError, match="400 .*at least 1") as e:
        vastfake.skip_offsets("accounts", 0, 0)
    assert e.value.status == 400
    with pytest.raises(TypeError):
        vastfake.skip_offsets("accounts", 0, "5")
    vastfake.assert_no_refusals()


def test_several_brokers_and_one_down(vastfake_factory):
    # Three broker ids, each on its own address: Metadata lists them all,
    # partition p is led by broker p mod 3, and a broker taken down refuses
    # connections while the others serve; it serves again once up. One
    # replica per partition: with three, acks=all would wait for broker 1
    # everywhere until it is fenced, as on Kafka.
    b = vastfake_factory(profile="kafka", brokers=3, topics=["orders:3"], args=["-default-replication-factor", "1"])
    listed = b.brokers()
    assert [x["id"] for x in listed] == [0, 1, 2]
    assert listed[0]["addr"] == b.bootstrap and not any(x["down"] for x in listed)
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=30)
    assert sorted(md.brokers) == [0, 1, 2]
    assert {p: md.topics["orders"].partitions[p].leader for p in range(3)} == {0: 0, 1: 1, 2: 2}

    b.broker_down(1)
    assert [x["down"] for x in b.brokers()] == [False, True, False]
    host, port = listed[1]["addr"].rsplit(":", 1)
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=5).close()
    with pytest.raises(ControlPlaneError) as e:
        b.broker_down(1)
    assert e.value.status == 409
    with pytest.raises(ControlPlaneError) as e:
        b.broker_up(7)
    assert e.value.status == 404

    p = producer(b.bootstrap)
    p.produce("orders", value=b"to broker 0", partition=0)
    assert p.flush(30) == 0, "broker 0 serves while broker 1 is down"
    p.produce("orders", value=b"to broker 1", partition=1)
    assert p.flush(1) == 1, "partition 1 waits for its leader"
    b.broker_up(1)
    assert p.flush(30) == 0, "and is acknowledged once it is back"
    assert b.end_offset("orders", 0) == 1 and b.end_offset("orders", 1) == 1

    # The request log tells which broker served what: the produce for
    # partition 1 went to its leader, broker 1, once it was back.
    assert any(r.api == "Produce" and r.broker == 1 and not r.error for r in b.requests(api="Produce", broker=1))

    # A leader moved: librdkafka finds the new one and produces on.
    assert b.move_leader("orders", 0, 2) == {"topic": "orders", "partition": 0, "leader": 2, "leaderEpoch": 1}
    md = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=30)
    assert md.topics["orders"].partitions[0].leader == 2
    p.produce("orders", value=b"to broker 2", partition=0)
    assert p.flush(30) == 0
    del p
    assert b.end_offset("orders", 0) == 2
    b.move_coordinator("billing", 2)
    b.fail_over_address(2)  # VAST's virtual-IP failover: connections reset, the address serves again
    p2 = producer(b.bootstrap)
    p2.produce("orders", value=b"after the failover", partition=0)
    assert p2.flush(30) == 0
    del p2
    assert b.end_offset("orders", 0) == 3
    with pytest.raises(ControlPlaneError) as e:
        b.move_leader("orders", 9, 0)
    assert e.value.status == 404


def test_several_brokers_group_through_moves(vastfake_factory):
    # A confluent-kafka consumer group (librdkafka), committing synchronously
    # after each message, reads on through a coordinator move and a
    # virtual-IP failover of the new coordinator's address: every record
    # once. librdkafka reports the refused connections of the failover as
    # errors that are not fatal and reconnects by itself.
    b = vastfake_factory(profile="kafka", brokers=3, topics=["orders:3"])
    p = producer(b.bootstrap, acks="all")
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "billing", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200})
    c.subscribe(["orders"])
    seen = {}

    def batch(first):
        for i in range(first, first + 30):
            p.produce("orders", key=b"order-%d" % i, value=b"v", partition=i % 3)
        assert p.flush(30) == 0
        want = {b"order-%d" % i for i in range(first, first + 30)}

        def read():
            m = c.poll(0.1)
            if m is None:
                return False
            if m.error():
                assert not m.error().fatal(), m.error()
                return False
            seen[m.key()] = seen.get(m.key(), 0) + 1
            c.commit(message=m, asynchronous=False)
            return want <= set(seen)

        b.wait_for("the group to read records %d to %d" % (first, first + 29), read)

    try:
        batch(0)
        to = (b.group("billing").coordinator + 1) % 3
        b.move_coordinator("billing", to)
        b.clear_requests()
        batch(30)
        b.wait_served("OffsetCommit", to)
        b.fail_over_address(to)
        batch(60)
    finally:
        c.close()
    assert len(seen) == 90 and set(seen.values()) == {1}, "every record read once"


def test_transactions_through_the_control_plane(vastfake_bin):
    """A transactional producer in the kafka profile: an aborted and a
    committed transaction, the markers and each record's fate in the
    records, the transactional id's state, and a transaction the broker
    aborts at its timeout when the manual clock passes it."""
    from confluent_kafka import KafkaException
    with vastfake.Broker(binary=vastfake_bin, profile="kafka", manual_clock=True, topics=["ledger:1"]) as b:
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "ledger-writer",
                      "transaction.timeout.ms": 10000, "linger.ms": 0})
        p.init_transactions(30)
        for value, commit in ((b"dropped", False), (b"kept", True)):
            p.begin_transaction()
            p.produce("ledger", value=value, partition=0)
            assert p.flush(30) == 0
            if commit:
                p.commit_transaction(30)
            else:
                p.abort_transaction(30)
        recs = b.records("ledger")
        assert [(r.value, r.marker, r.transaction) for r in recs] == [
            (b"dropped", "", "aborted"), (None, "abort", ""), (b"kept", "", "committed"), (None, "commit", "")]
        assert all(r.producer_id > 0 for r in recs)
        t = b.transaction("ledger-writer")
        assert (t.state, t.committed, t.aborted, t.timeout_ms) == ("CompleteCommit", 1, 1, 10000)
        assert b.transactions(open_only=True) == []

        p.begin_transaction()
        p.produce("ledger", value=b"late", partition=0)
        assert p.flush(30) == 0
        [open_txn] = b.transactions(open_only=True)
        assert open_txn.partitions == [("ledger", 0)] and open_txn.start is not None
        b.advance("10s")
        t = b.transaction("ledger-writer")
        assert (t.state, t.timed_out) == ("CompleteAbort", 1)
        with pytest.raises(KafkaException):
            p.commit_transaction(30)
        with pytest.raises(ControlPlaneError):
            b.transaction("nobody")
