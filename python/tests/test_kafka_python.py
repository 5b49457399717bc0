"""The package with kafka-python (Debian's python3-kafka): a consumer group
that commits what it read, and a refusal by a VAST rule."""

import pytest

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402


def create_topic(bootstrap, name, partitions):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="admin", request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        admin.close()


def test_consumer_group_commits_what_it_read(vastfake):
    create_topic(vastfake.bootstrap, "shipments", 2)
    producer = KafkaProducer(bootstrap_servers=vastfake.bootstrap, client_id="shipper", linger_ms=0)
    try:
        for i in range(10):
            producer.send("shipments", value=b"s-%d" % i, partition=i % 2).get(timeout=30)
    finally:
        producer.close(timeout=10)

    consumer = KafkaConsumer("shipments", bootstrap_servers=vastfake.bootstrap, group_id="warehouse",
                             client_id="warehouse-1", auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=30000)
    try:
        seen = []
        for msg in consumer:
            seen.append(msg.value)
            if len(seen) == 10:
                break
        consumer.commit()
    finally:
        consumer.close(autocommit=False)
    assert sorted(seen) == sorted(b"s-%d" % i for i in range(10))
    vastfake.assert_committed("warehouse", "shipments", 0, 5)
    vastfake.assert_committed("warehouse", "shipments", 1, 5)
    assert [r.client_id for r in vastfake.requests(api="OffsetCommit")] == ["warehouse-1"]
    vastfake.assert_no_refusals()


def test_vast_refuses_compressed_batches(vastfake):
    create_topic(vastfake.bootstrap, "metrics", 1)
    producer = KafkaProducer(bootstrap_servers=vastfake.bootstrap, client_id="metrics", compression_type="gzip",
                             retries=0, linger_ms=0)
    try:
        with pytest.raises(kafka.errors.KafkaError):
            producer.send("metrics", value=b"m" * 1000).get(timeout=30)
    finally:
        producer.close(timeout=10)
    refused = vastfake.assert_refused("NoCompression")
    assert refused[0].client_id == "metrics" and refused[0].api == "Produce"


def test_retries_through_an_injected_fault(vastfake):
    create_topic(vastfake.bootstrap, "invoices", 1)
    vastfake.fail_next("Produce", "NOT_LEADER_FOR_PARTITION", 2, topic="invoices")
    producer = KafkaProducer(bootstrap_servers=vastfake.bootstrap, client_id="invoicer", retries=5,
                             retry_backoff_ms=10, linger_ms=0)
    try:
        producer.send("invoices", value=b"i-1").get(timeout=30)
    finally:
        producer.close(timeout=10)
    faulted = [r for r in vastfake.requests(api="Produce") if r.fault]
    assert [(r.client_id, r.error) for r in faulted] == [("invoicer", "NOT_LEADER_FOR_PARTITION")] * 2
    assert vastfake.values("invoices") == [b"i-1"]


def test_several_brokers_one_down(vastfake_factory):
    # kafka-python with three brokers, one replica per partition: while
    # broker 1 is down, the partition it leads waits and the others are
    # acknowledged; once it is back the waiting record is acknowledged too,
    # and each record is stored once. (With three replicas, acks=all would
    # wait for broker 1 everywhere until it is fenced, as on Kafka.)
    b = vastfake_factory(profile="kafka", brokers=3, topics=["orders:3"], args=["-default-replication-factor", "1"])
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="orders", acks="all", linger_ms=0,
                             retries=1000, retry_backoff_ms=20, reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)
    try:
        for p in range(3):
            producer.send("orders", value=b"before", partition=p).get(timeout=30)
        b.broker_down(1)
        producer.send("orders", value=b"while down", partition=0).get(timeout=30)
        waiting = producer.send("orders", value=b"waits for broker 1", partition=1)
        producer.send("orders", value=b"while down", partition=2).get(timeout=30)
        assert not waiting.is_done, "partition 1's leader is down"
        b.broker_up(1)
        waiting.get(timeout=30)
    finally:
        producer.close(timeout=10)
    assert [b.end_offset("orders", p) for p in range(3)] == [2, 2, 2]


def test_several_brokers_leader_moves(vastfake_factory):
    # kafka-python follows a partition whose leader moves: broker 1 answers
    # NOT_LEADER_OR_FOLLOWER, the producer refreshes its metadata and the
    # record is acknowledged by broker 2, stored once.
    b = vastfake_factory(profile="kafka", brokers=3, topics=["orders:3"])
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="orders", acks="all", linger_ms=0,
                             retries=1000, retry_backoff_ms=20)
    try:
        for p in range(3):
            producer.send("orders", value=b"before", partition=p).get(timeout=30)
        b.clear_requests()
        assert b.move_leader("orders", 1, 2)["leader"] == 2
        producer.send("orders", value=b"after the move", partition=1).get(timeout=30)
    finally:
        producer.close(timeout=10)
    assert [b.end_offset("orders", p) for p in range(3)] == [1, 2, 1]
    assert [r.broker for r in b.wait_served("Produce", 2)] == [2]
    assert b.requests(api="Produce", broker=1) == [] or all(r.error for r in b.requests(api="Produce", broker=1))


def test_several_brokers_group_through_moves(vastfake_factory):
    # A kafka-python consumer group, committing synchronously after each
    # poll, reads on through a coordinator move and a virtual-IP failover
    # of the new coordinator's address. kafka-python reads at least once (a
    # commit refused by the old coordinator is retried, records polled but
    # not committed when a rebalance comes are read again); nothing is lost.
    b = vastfake_factory(profile="kafka", brokers=3, topics=["orders:3"])
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=0)
    consumer = KafkaConsumer("orders", bootstrap_servers=b.bootstrap, group_id="billing", client_id="billing",
                             auto_offset_reset="earliest", enable_auto_commit=False, heartbeat_interval_ms=100,
                             reconnect_backoff_ms=20, reconnect_backoff_max_ms=200, retry_backoff_ms=20)
    seen = {}

    def batch(first):
        for i in range(first, first + 30):
            producer.send("orders", key=b"order-%d" % i, value=b"v", partition=i % 3).get(timeout=30)
        want = {b"order-%d" % i for i in range(first, first + 30)}
        b.wait_for("the group to read records %d to %d" % (first, first + 29),
                   lambda: read_some() or want <= set(seen))

    def read_some():
        for records in consumer.poll(timeout_ms=100).values():
            for r in records:
                seen[r.key] = seen.get(r.key, 0) + 1
        try:
            consumer.commit()
        except kafka.errors.KafkaError:
            pass  # retried at the next poll, as an app's loop does

    try:
        batch(0)
        to = (b.group("billing").coordinator + 1) % 3
        b.move_coordinator("billing", to)
        batch(30)
        assert b.group("billing").coordinator == to
        b.fail_over_address(to)
        batch(60)
    finally:
        consumer.close()
        producer.close(timeout=10)
    assert len(seen) == 90
    assert sum(seen.values()) - 90 <= 30, "each record read again at most once per move"
