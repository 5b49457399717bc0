# The code blocks of VAST's "Consume events" page (VAST Cluster 5.5
# documentation), verbatim and in order, run as one Python session. TestSeedWalkthrough
# (../walkthrough_test.go) runs it against vastfake and compares stdout with
# expected.txt, the output the page shows.
#
# One change: confluent-kafka 1.7 (Debian's python3-confluent-kafka) has no
# AdminClient.delete_consumer_groups, so delete_group runs a small Go program
# (../cmd/deletegroup, franz-go's kadm) named by VASTFAKE_DELETEGROUP. It
# prints "deleted" or the Kafka error name, as the page's helper returns.
#
# Environment: KAFKA_BOOTSTRAP, optional KAFKA_USERNAME and KAFKA_PASSWORD,
# VASTFAKE_DELETEGROUP.

import json
import os

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "docs-consuming-orders"
GROUP = "docs-consuming-billing"
GROUP_2 = "docs-consuming-rebalance"

def kafka_conf(extra=None):
    conf = {"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"]}
    if os.environ.get("KAFKA_USERNAME"):
        conf.update({
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": os.environ["KAFKA_USERNAME"],
            "sasl.password": os.environ["KAFKA_PASSWORD"],
        })
    conf.update(extra or {})
    return conf

def consumer_for(group):
    return Consumer(kafka_conf({
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }))

def read(consumer, expected, max_polls=60):
    """Poll until `expected` events have arrived or `max_polls` polls have passed."""
    events = []
    for _ in range(max_polls):
        msg = consumer.poll(1.0)
        if msg is None:
            if len(events) >= expected:
                break
            continue
        if msg.error():
            raise KafkaException(msg.error())
        events.append((msg.partition(), msg.offset(), json.loads(msg.value())))
    return events

admin = AdminClient(kafka_conf())
admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)],
                    operation_timeout=30)[TOPIC].result()

producer = Producer(kafka_conf({"acks": "all", "enable.idempotence": False, "compression.type": "none"}))

def produce(first, count):
    for n in range(first, first + count):
        producer.produce(TOPIC, key=f"order-{n}", value=json.dumps({"order": n}))
    return producer.flush(30)

print("still queued:", produce(0, 30))

# ---- Consume in a group

consumer = consumer_for(GROUP)
consumer.subscribe([TOPIC])

events = read(consumer, expected=30)
consumer.commit(asynchronous=False)

print("events:", len(events))
print("orders:", sorted(e["order"] for _, _, e in events) == list(range(30)))
print("partitions:", sorted({p for p, _, _ in events}))

# ---- Check the committed offsets

committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=10)
for tp in committed:
    low, high = consumer.get_watermark_offsets(tp, timeout=10)
    print(f"partition {tp.partition}: committed={tp.offset} end={high} lag={high - tp.offset}")
consumer.close()

# ---- Resume where the group left off

produce(30, 5)
consumer = consumer_for(GROUP)
consumer.subscribe([TOPIC])

events = read(consumer, expected=5)
consumer.commit(asynchronous=False)
consumer.close()
print("orders:", sorted(e["order"] for _, _, e in events))

# ---- Rebalancing

c1, c2 = consumer_for(GROUP_2), consumer_for(GROUP_2)
c1.subscribe([TOPIC])
c2.subscribe([TOPIC])

for _ in range(60):  # bounded: poll both until the partitions are shared out
    c1.poll(0.5)
    c2.poll(0.5)
    sizes = sorted([len(c1.assignment()), len(c2.assignment())])
    if sizes[0] > 0 and sum(sizes) == 3:
        break
print("partitions per consumer:", sizes)

# ---- Read partitions without a group

reader = consumer_for("docs-consuming-replay")
sizes = {}
for p in range(3):
    low, high = reader.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)
    sizes[p] = (low, high)
part = max(sizes, key=lambda p: sizes[p][1] - sizes[p][0])
low, high = sizes[part]

reader.assign([TopicPartition(TOPIC, part, OFFSET_BEGINNING)])
events = read(reader, expected=high - low)
print("starts at the earliest offset:", events[0][1] == low, "| all read:", len(events) == high - low)

# ---- Seek to an offset

target = events[2][1]  # the third event's offset in that partition
reader.seek(TopicPartition(TOPIC, part, target))
msg = reader.poll(10.0)
print("offset after seek:", msg.offset() == target)
reader.close()

# ---- Delete a consumer group

# The page's helper calls admin.delete_consumer_groups, which confluent-kafka
# 1.7 lacks; the Go helper does the same DeleteGroups request instead.
import subprocess

def delete_group(group):
    out = subprocess.run(
        [os.environ["VASTFAKE_DELETEGROUP"], "-bootstrap", os.environ["KAFKA_BOOTSTRAP"], group],
        capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()

print("while active:", delete_group(GROUP_2))
c1.close()
c2.close()
print("after close: ", delete_group(GROUP_2))

# ---- Clean up

print("billing group:", delete_group(GROUP))
for name, future in admin.delete_topics([TOPIC], operation_timeout=30).items():
    future.result()
    print("deleted", name)
