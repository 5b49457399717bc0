"""A small app written for Kafka with the Confluent Python client, run by
TestAuditConfluentPython against vastfake in audit mode: it produces ten
orders and reads them back in a consumer group.

Usage: app.py defaults|vast. "defaults" is the producer at librdkafka's
defaults and a consumer with partition.assignment.strategy=cooperative-sticky,
as many apps set it; "vast" is the same app with the settings
docs/client-settings.md gives. KAFKA_BOOTSTRAP names the
broker; the topic "orders" exists. With KAFKA_SASL_MECHANISM set (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) both log in as KAFKA_USERNAME with
KAFKA_PASSWORD. Prints "ok N" when every order came back.
"""

import os
import sys

from confluent_kafka import Consumer, Producer

mode = sys.argv[1]
bootstrap = os.environ["KAFKA_BOOTSTRAP"]
producer_conf = {"bootstrap.servers": bootstrap, "client.id": "orders-py"}
consumer_conf = {"bootstrap.servers": bootstrap, "client.id": "billing-py", "group.id": "billing-py",
                 "auto.offset.reset": "earliest", "enable.auto.commit": False}
if os.environ.get("KAFKA_SASL_MECHANISM"):
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": os.environ["KAFKA_SASL_MECHANISM"],
            "sasl.username": os.environ["KAFKA_USERNAME"], "sasl.password": os.environ["KAFKA_PASSWORD"]}
    producer_conf.update(sasl)
    consumer_conf.update(sasl)
if mode == "defaults":
    consumer_conf["partition.assignment.strategy"] = "cooperative-sticky"
else:
    producer_conf.update({"enable.idempotence": False, "compression.type": "none"})
    consumer_conf["partition.assignment.strategy"] = "range,roundrobin"

producer = Producer(producer_conf)
for i in range(10):
    producer.produce("orders", key=b"order-%d" % i, value=b'{"order": %d}' % i)
if producer.flush(30) != 0:
    sys.exit("orders not delivered")

consumer = Consumer(consumer_conf)
consumer.subscribe(["orders"])
seen = 0
for _ in range(600):  # at most 60 s
    msg = consumer.poll(0.1)
    if msg is None:
        continue
    if msg.error():
        sys.exit("consumer error: %s" % msg.error())
    seen += 1
    if seen == 10:
        break
consumer.commit(asynchronous=False)
consumer.close()
print("ok", seen)
