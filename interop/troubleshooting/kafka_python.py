# Prints, one per line as "rule<TAB>text", what kafka-python says when the
# VAST profile refuses it; TestTroubleshootingKafkaPython compares the texts
# with docs/troubleshooting.md's table.
import sys

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

bootstrap = sys.argv[1]


def produce(topic, value, **conf):
    producer = KafkaProducer(bootstrap_servers=bootstrap, retries=0, **conf)
    try:
        producer.send(topic, value).get(timeout=20)
        return None
    except Exception as e:  # the text an app would log
        return repr(e)
    finally:
        producer.close(timeout=5)


print("NoCompression\t%s" % produce("orders", b"compressible " * 200, compression_type="gzip"))
print("MaxValueBytes\t%s" % produce("orders", b"x" * (130 << 10), max_request_size=4 << 20))
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
try:
    admin.create_topics([NewTopic("refused", 1, 1, topic_configs={"segment.bytes": "1000"})])
    print("VASTTopicConfigsOnly\tNone")
except Exception as e:
    print("VASTTopicConfigsOnly\t%r" % e)
finally:
    admin.close()
