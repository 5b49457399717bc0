# Leader election with the Python clients, run against the vastfake binary
# (kafka profile, three brokers, "orders" of three partitions with three
# replicas each) by TestPythonClientsThroughAnElection
# (../election_test.go), which compares stdout with expected.txt. The entry
# points are confluent.py (the Confluent Python client, librdkafka) and
# kafka_python.py (kafka-python).
#
# A producer with acks=all and a consumer group: 30 records read; the
# broker that coordinates the group (and leads one partition) taken down
# for good through the control plane; 30 more produced and read without
# waiting for it to come back. The partition it led and the group's
# coordinator move to other brokers after the election delay; nothing
# acknowledged is lost.
#
# Environment: KAFKA_BOOTSTRAP (host:port), VASTFAKE_HTTP (http://host:port/).

import json
import os
import sys
import time
import urllib.request

BOOTSTRAP = os.environ["KAFKA_BOOTSTRAP"]
HTTP = os.environ["VASTFAKE_HTTP"]
DEADLINE = time.monotonic() + 90  # bounds every wait; never decides behaviour
TOPIC, GROUP = "orders", "billing-py"


def fail(why):
    print("FAIL: " + why, file=sys.stderr, flush=True)
    sys.exit(1)


def control(path, method="GET"):
    req = urllib.request.Request(HTTP + path, method=method)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def read_until(consumer_poll, seen, n):
    """Polls until the group has read n distinct keys; consumer_poll returns keys."""
    while len(seen) < n:
        if time.monotonic() > DEADLINE:
            fail("the group read %d of %d keys" % (len(seen), n))
        for k in consumer_poll():
            seen[k] = seen.get(k, 0) + 1


def run(client):
    """client has send(i) (acks=all, returns once acknowledged), poll() (keys
    read since the last call) and close()."""
    seen = {}
    for i in range(30):
        client.send(i)
    print("produced 30 with acks=all")
    read_until(client.poll, seen, 30)
    print("the group read 30")

    coordinator = control("groups/" + GROUP)["coordinator"]
    led = [p for p in control("topics/" + TOPIC)["partitions"] if p["leader"] == coordinator]
    if len(led) != 1:
        fail("broker %d leads %d partitions of orders, want 1" % (coordinator, len(led)))
    control("brokers/%d/down" % coordinator, "POST")
    print("broker down: the group's coordinator and a partition's leader")

    for i in range(30, 60):
        client.send(i)
    print("produced 30 more with acks=all")
    read_until(client.poll, seen, 60)
    print("the group read 60, none lost")

    down = [b for b in control("brokers")["brokers"] if b["down"]]
    if [b["id"] for b in down] != [coordinator]:
        fail("brokers down: %s, want only %d" % (down, coordinator))
    p = control("topics/" + TOPIC)["partitions"][led[0]["partition"]]
    if p["leader"] != coordinator and p["leaderEpoch"] == 1 and coordinator not in p["isr"]:
        print("the partition has a new leader at epoch 1, the down broker out of its in-sync set")
    else:
        fail("partition after the election: %s" % p)
    if control("groups/" + GROUP)["coordinator"] != coordinator:
        print("the group has a new coordinator")
    stored = sum(p["highWatermark"] for p in control("topics/" + TOPIC)["partitions"])
    print("stored %d" % stored)
    client.close()
