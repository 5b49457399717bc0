"""A first test with vastfake (pip install ./python): the app reads orders
as the consumer group "billing" and commits them; the test checks the
committed offset and that no VAST rule refused anything."""

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def read_orders(bootstrap, n):
    """Stands for your code: reads n orders as the consumer group "billing"
    and commits what it read."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "billing",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    consumer.subscribe(["orders"])
    orders = []
    try:
        while len(orders) < n:
            msg = consumer.poll(30)
            if msg is None:
                raise TimeoutError("no order within 30 s")
            if msg.error():
                raise KafkaException(msg.error())
            orders.append(msg.value().decode())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return orders


def test_billing_commits_what_it_read(vastfake):  # the plugin's broker, reset for this test
    admin = AdminClient({"bootstrap.servers": vastfake.bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=1, replication_factor=1)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": vastfake.bootstrap, "enable.idempotence": False})  # VAST has none
    for order in ("o-1", "o-2", "o-3"):
        producer.produce("orders", value=order)
    assert producer.flush(30) == 0

    assert read_orders(vastfake.bootstrap, 3) == ["o-1", "o-2", "o-3"]
    vastfake.assert_committed("billing", "orders", 0, 3)  # the next offset to read
    vastfake.assert_no_refusals()
