# Transactions with the Confluent Python client (python3-confluent-kafka on
# Debian's librdkafka), run against the vastfake binary in the kafka profile
# on a manual clock by TestPythonTransactions (../transactions_test.go),
# which compares stdout with expected.txt.
#
# Consume-transform-produce: records copied from one topic to another in
# transactions that also send the group's offsets, the first aborted; a
# zombie producer fenced by a newer one with its transactional id; and a
# transaction the broker aborts at its timeout when the control plane
# advances its clock. A read_committed reader must never see an aborted
# record; the control plane shows the markers.
#
# Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP (http://host:port/).

import json
import os
import sys
import time
import urllib.request

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ["KAFKA_BOOTSTRAP"]
HTTP = os.environ["VASTFAKE_HTTP"]
DEADLINE = time.monotonic() + 60  # bounds every wait; never decides behaviour


def fail(why):
    print("FAIL: " + why, file=sys.stderr, flush=True)
    sys.exit(1)


def control(path, method="GET"):
    req = urllib.request.Request(HTTP + path, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def txn_producer(txn_id, timeout_ms=60000):
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": txn_id,
                  "transaction.timeout.ms": timeout_ms, "compression.type": "none"})
    p.init_transactions(30)
    return p


def read_committed(topic):
    """Every value a read_committed consumer reads from partition 0, up to its end."""
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "reader-" + topic, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    while time.monotonic() < DEADLINE:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                c.close()
                return got
            fail("reader: %s" % m.error())
        got.append(m.value().decode())
    fail("reader of %s did not reach the end" % topic)


admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("py-in", "py-out", "py-fence", "py-slow")]).values():
    f.result(30)

# Ten input records, then copy them in transactions; the first aborts.
plain = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": False, "compression.type": "none"})
for i in range(10):
    plain.produce("py-in", value=("v%d" % i).encode(), partition=0)
plain.flush(30)

consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "py-etl", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "isolation.level": "read_committed"})
consumer.subscribe(["py-in"])
etl = txn_producer("py-etl")
copied, rounds = 0, 0
while copied < 10:
    if time.monotonic() > DEADLINE:
        fail("copied %d of 10" % copied)
    msgs = [m for m in consumer.consume(10, 0.5) if not m.error()]
    if not msgs:
        continue
    etl.begin_transaction()
    for m in msgs:
        etl.produce("py-out", value=b"out-" + m.value(), partition=0)
    etl.flush(30)  # delivered before the abort, so aborted records are in the log
    etl.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30)
    if rounds == 0:
        etl.abort_transaction(30)
        committed = consumer.committed(consumer.assignment(), 10)
        for tp in committed:
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
        print("aborted the first transaction")
    else:
        etl.commit_transaction(30)
        copied += len(msgs)
    rounds += 1
print("copied %d records in committed transactions" % copied)
print("read_committed reads", read_committed("py-out"))
committed = consumer.committed([TopicPartition("py-in", 0)], 10)[0].offset
print("group py-etl committed offset", committed)
consumer.close()
records = control("topics/py-out/partitions/0/records?limit=10000")
markers = [r["marker"] for r in records if r.get("marker")]
aborted = sum(1 for r in records if r.get("transaction") == "aborted")
print("markers: first %s, then only commits: %s; aborted records kept in the log: %s" % (
    markers[0], set(markers[1:]) == {"commit"}, aborted > 0))

# A zombie fenced by a newer producer with its transactional id.
zombie = txn_producer("py-fenced")
zombie.begin_transaction()
zombie.produce("py-fence", value=b"zombie", partition=0)
zombie.flush(30)
fresh = txn_producer("py-fenced")
fresh.begin_transaction()
fresh.produce("py-fence", value=b"fresh", partition=0)
fresh.commit_transaction(30)
try:
    zombie.commit_transaction(30)
    print("the zombie committed")
except KafkaException as e:
    err = e.args[0]
    print("zombie commit: fatal=%s %s" % (err.fatal(), err.name()))
print("read_committed reads", read_committed("py-fence"))

# A transaction the broker aborts at its timeout, on its manual clock.
slow = txn_producer("py-slow", timeout_ms=10000)
slow.begin_transaction()
slow.produce("py-slow", value=b"late", partition=0)
slow.flush(30)
print("before the timeout:", control("transactions/py-slow")["state"])
control("clock/advance?d=10s", method="POST")
state = control("transactions/py-slow")
print("after 10s on the broker's clock: %s, timed out %d" % (state["state"], state["timedOut"]))
try:
    slow.commit_transaction(30)
    print("the timed-out transaction committed")
except KafkaException as e:
    print("commit after the timeout refused: %s" % e.args[0].name())
again = txn_producer("py-slow")
again.begin_transaction()
again.produce("py-slow", value=b"on time", partition=0)
again.commit_transaction(30)
print("read_committed reads", read_committed("py-slow"))
