# The election scenario (election.py) with the Confluent Python client.

from confluent_kafka import Consumer, Producer

import election

TOPIC = election.TOPIC


class Client:
    def __init__(self):
        self.producer = Producer({"bootstrap.servers": election.BOOTSTRAP, "acks": "all", "compression.type": "none",
                                  "retry.backoff.ms": 20, "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
                                  "log.connection.close": False})
        self.consumer = Consumer({"bootstrap.servers": election.BOOTSTRAP, "group.id": election.GROUP,
                                  "auto.offset.reset": "earliest", "auto.commit.interval.ms": 100,
                                  "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
                                  "log.connection.close": False})
        self.consumer.subscribe([TOPIC])

    def send(self, i):
        errors = []
        self.producer.produce(TOPIC, key=b"order-%d" % i, value=b'{"order": %d}' % i, partition=i % 3,
                              on_delivery=lambda err, _msg: errors.append(err))
        while not errors:
            if self.producer.flush(1) == 0 and not errors:
                election.fail("no delivery report for order-%d" % i)
        if errors[0] is not None:
            election.fail("order-%d: %s" % (i, errors[0]))

    def poll(self):
        m = self.consumer.poll(0.1)
        if m is None or m.error():
            return []  # a broker going away is reported so; librdkafka reconnects
        return [m.key().decode()]

    def close(self):
        self.consumer.close()


election.run(Client())
