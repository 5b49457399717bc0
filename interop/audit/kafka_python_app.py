"""Produces ten compressible orders with kafka-python under its own client
id and gzip compression; TestAuditRecognisesClients checks that the audit
finding names kafka-python and its own setting. KAFKA_BOOTSTRAP names the
broker; the topic "orders" exists. Prints "ok 10" when every order was acked.
"""

import os

from kafka import KafkaProducer

producer = KafkaProducer(bootstrap_servers=os.environ["KAFKA_BOOTSTRAP"], client_id="orders-app",
                         compression_type="gzip")
for i in range(10):
    producer.send("orders", key=b"order-%d" % i, value=(b'{"order": %d}' % i) * 20).get(timeout=30)
producer.close(timeout=10)
print("ok 10")
