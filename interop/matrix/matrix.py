# The client-matrix scenario for the Confluent Python client
# (python3-confluent-kafka 1.7 on Debian's librdkafka), run against the
# vastfake binary by TestPythonClientMatrix (../matrix_test.go), which
# compares stdout with expected.txt.
#
# Produce, consume in a group and commit, rebalance onto a second member, and
# get a VAST refusal (a value over 126 KB); the group and the refusal are then
# read back through the binary's HTTP control plane. Last, a compacted topic
# is read across an offset gap and a compaction that the control plane
# drives, and refuses a keyless record.
#
# Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP (http://host:port/).

import json
import os
import sys
import time
import urllib.request

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ["KAFKA_BOOTSTRAP"]
HTTP = os.environ["VASTFAKE_HTTP"]
TOPIC = "matrix-orders"
GROUP = "matrix-billing"
DEADLINE = time.monotonic() + 60  # bounds every wait; never decides behaviour


def fail(why):
    print("FAIL: " + why, file=sys.stderr, flush=True)
    sys.exit(1)


def until(cond, what, poll=lambda: None):
    """Poll (running poll between checks) until cond() holds or the deadline passes."""
    while not cond():
        if time.monotonic() > DEADLINE:
            fail("timed out waiting until " + what)
        poll()


def control(path, method="GET"):
    req = urllib.request.Request(HTTP + path, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def producer(extra=None):
    conf = {"bootstrap.servers": BOOTSTRAP, "enable.idempotence": False, "compression.type": "none"}
    conf.update(extra or {})
    return Producer(conf)


assigned = {}


def consumer(name):
    c = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": GROUP,
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "heartbeat.interval.ms": 100,
        "session.timeout.ms": 6000,
    })

    def on_assign(_, parts):
        assigned[name] = sorted(tp.partition for tp in parts)

    def on_revoke(_, parts):
        assigned[name] = []

    c.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke)
    return c


# 1. Create a topic and produce to every partition.
admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])[TOPIC].result()
print("created", TOPIC, "with 4 partitions")

reports = []
p = producer()
for i in range(8):
    p.produce(TOPIC, key=b"order-%d" % i, value=json.dumps({"order": i}).encode(), partition=i % 4,
              on_delivery=lambda err, msg: reports.append(err))
p.flush(30)
if len(reports) != 8 or any(reports):
    fail("delivery reports %r" % reports)
print("produced 8 records")

# 2. One member consumes everything and commits.
one = consumer("py-one")
records = []


def poll_one():
    msg = one.poll(0.1)
    if msg is None:
        return
    if msg.error():
        fail("poll: %s" % msg.error())
    records.append((msg.partition(), msg.offset(), json.loads(msg.value())["order"]))


until(lambda: len(records) >= 8, "py-one read 8 records", poll_one)
print("py-one read", sorted(r[2] for r in records), "from partitions", assigned["py-one"])
one.commit(asynchronous=False)
committed = one.committed([TopicPartition(TOPIC, part) for part in range(4)], timeout=10)
print("committed", ", ".join("%d:%d" % (tp.partition, tp.offset) for tp in committed))

# 3. A second member joins: the group rebalances two and two.
two = consumer("py-two")


def poll_both():
    for c in (one, two):
        msg = c.poll(0.05)
        if msg is not None and msg.error():
            fail("poll: %s" % msg.error())


until(lambda: len(assigned.get("py-one", [])) == 2 and len(assigned.get("py-two", [])) == 2,
      "py-one and py-two own two partitions each", poll_both)
print("rebalanced: py-one owns", assigned["py-one"], "and py-two owns", assigned["py-two"])

group = {}


def group_settled():
    global group
    group = control("groups/" + GROUP)
    return group["state"] == "Stable" and len(group["members"]) == 2


until(group_settled, "the control plane shows the group Stable with two members", lambda: poll_both())
owners = {part["partition"]: part["ownerClientId"] for part in group["partitions"]}
lags = {part["partition"]: part["lag"] for part in group["partitions"]}
print("control plane: group", group["state"], "protocol", group["protocol"],
      "owners", [owners[part] for part in range(4)], "lag", [lags[part] for part in range(4)])

# 4. VAST refusals: a value over VAST's 126 KB limit, and a gzip batch.
# (librdkafka before 2.10 compresses only when ApiVersions advertises
# Produce from v0, as Kafka 4.x does; otherwise it sends gzip, snappy and
# lz4 batches uncompressed without a word.)
errors = []
big = producer({"message.send.max.retries": 0})
big.produce(TOPIC, value=b"x" * (130 * 1024), partition=0, on_delivery=lambda err, msg: errors.append(err))
big.flush(30)
if len(errors) != 1 or errors[0] is None:
    fail("a 130 KB value was accepted: %r" % errors)
if errors[0].code() != KafkaError.MSG_SIZE_TOO_LARGE:
    fail("a 130 KB value was refused with %s" % errors[0])
print("130 KB value refused:", errors[0].name())
refusals = control("requests?rule=MaxValueBytes")
print("request log:", refusals[0]["api"], "refused by rule", refusals[0]["rule"], "with", refusals[0]["error"])
errors = []
gz = producer({"message.send.max.retries": 0, "compression.type": "gzip"})
gz.produce(TOPIC, value=b"compressible " * 100, partition=0, on_delivery=lambda err, msg: errors.append(err))
gz.flush(30)
if len(errors) != 1 or errors[0] is None:
    fail("a gzip batch was accepted: %r" % errors)
print("gzip batch refused:", errors[0].name())
refusals = control("requests?rule=NoCompression")
print("request log:", refusals[0]["api"], "refused by rule", refusals[0]["rule"], "with", refusals[0]["error"])

# 5. A compacted topic (VAST lists topic compaction among the Kafka features
# it supports): an offset gap and a compaction driven through the control
# plane, read across by a group, and a keyless record refused.
COMPACTED = "matrix-prices"
admin.create_topics([NewTopic(COMPACTED, num_partitions=1, replication_factor=1,
                              config={"cleanup.policy": "compact"})])[COMPACTED].result()
cp = producer({"message.send.max.retries": 0})


def send(key, value):
    """Produce one record in a batch of its own; return the delivery error."""
    out = []
    cp.produce(COMPACTED, key=key, value=value, partition=0, on_delivery=lambda err, msg: out.append(err))
    cp.flush(30)
    if len(out) != 1:
        fail("no delivery report for %r" % value)
    return out[0]


for key, value in ((b"apple", b"1.00"), (b"pear", b"2.00"), (b"apple", b"1.10")):
    if send(key, value) is not None:
        fail("produce to %s: %s" % (COMPACTED, value))
control("topics/%s/partitions/0/skip?n=5" % COMPACTED, "POST")
send(b"plum", b"3.00")
control("topics/%s/compact" % COMPACTED, "POST")
reader = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "matrix-prices-reader",
                   "auto.offset.reset": "earliest", "enable.auto.commit": False})
reader.subscribe([COMPACTED])
read = []


def poll_reader():
    msg = reader.poll(0.1)
    if msg is None:
        return
    if msg.error():
        fail("poll %s: %s" % (COMPACTED, msg.error()))
    read.append((msg.offset(), msg.key().decode(), msg.value().decode()))


until(lambda: len(read) >= 3, "the reader read 3 records of " + COMPACTED, poll_reader)
print("compacted topic with a gap:", read)
reader.commit(asynchronous=False)
lagged = control("groups/matrix-prices-reader")["partitions"][0]
print("control plane: committed", lagged["committed"], "lag", lagged["lag"])
err = send(None, b"no key")
print("keyless record to a compacted topic refused:", err.name() if err else "no")
reader.close()

one.close()
two.close()
print("done")
