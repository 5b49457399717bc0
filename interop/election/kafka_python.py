# The election scenario (election.py) with kafka-python.

from kafka import KafkaConsumer, KafkaProducer

import election

TOPIC = election.TOPIC


class Client:
    def __init__(self):
        self.producer = KafkaProducer(bootstrap_servers=election.BOOTSTRAP, acks="all", retries=100,
                                      retry_backoff_ms=50, reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)
        self.consumer = KafkaConsumer(TOPIC, bootstrap_servers=election.BOOTSTRAP, group_id=election.GROUP,
                                      auto_offset_reset="earliest", auto_commit_interval_ms=100,
                                      retry_backoff_ms=50, reconnect_backoff_ms=20, reconnect_backoff_max_ms=200)

    def send(self, i):
        self.producer.send(TOPIC, key=b"order-%d" % i, value=b'{"order": %d}' % i, partition=i % 3).get(timeout=60)

    def poll(self):
        keys = []
        for records in self.consumer.poll(timeout_ms=100).values():
            keys.extend(r.key.decode() for r in records)
        return keys

    def close(self):
        self.producer.close(timeout=10)
        self.consumer.close()


election.run(Client())
