"""An example test using the kafka_bootstrap fixture from conftest.py: the
app's producer and consumer settings meet VAST's rules before production
does."""

import json

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def test_produce_and_consume(kafka_bootstrap):
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=3, replication_factor=1)])["orders"].result()

    # VAST has no idempotence and no compression.
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": False, "compression.type": "none"})
    for i in range(6):
        producer.produce("orders", key=b"order-%d" % i, value=json.dumps({"order": i}).encode())
    assert producer.flush(30) == 0

    consumer = Consumer({
        "bootstrap.servers": kafka_bootstrap,
        "group.id": "billing",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    consumer.subscribe(["orders"])
    seen = []
    for _ in range(300):  # at most 30 s
        msg = consumer.poll(0.1)
        if msg is not None and not msg.error():
            seen.append(json.loads(msg.value())["order"])
        if len(seen) == 6:
            break
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(seen) == list(range(6))


def test_vast_refuses_large_values(kafka_bootstrap):
    # VAST caps a record's value at 126 KB; Kafka would take 1 MB.
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic("uploads", num_partitions=1, replication_factor=1)])["uploads"].result()
    errors = []
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": False,
                         "message.send.max.retries": 0})
    producer.produce("uploads", value=b"x" * (130 * 1024), on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE, errors[0]
