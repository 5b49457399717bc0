"""SASL users given to the launcher (args=["-user", ...]) with kafka-python
(Debian's python3-kafka): a user logs in with SCRAM-SHA-512 in the kafka
profile, and VAST refuses SCRAM with the rule that says so."""

import pytest

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, KafkaProducer  # noqa: E402

from vastfake import Broker  # noqa: E402

USER = ["-user", "app:app-secret"]
SCRAM = dict(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
             sasl_plain_username="app", sasl_plain_password="app-secret")


def test_scram_in_the_kafka_profile(vastfake_bin):
    with Broker(binary=vastfake_bin, profile="kafka", topics=["orders:1"], args=USER) as b:
        producer = KafkaProducer(bootstrap_servers=b.bootstrap, client_id="scram-py", linger_ms=0, **SCRAM)
        try:
            for i in range(3):
                producer.send("orders", value=b"o-%d" % i).get(timeout=30)
        finally:
            producer.close(timeout=10)
        consumer = KafkaConsumer("orders", bootstrap_servers=b.bootstrap, group_id="scram-billing",
                                 auto_offset_reset="earliest", consumer_timeout_ms=30000, **SCRAM)
        try:
            seen = []
            for msg in consumer:
                seen.append(msg.value)
                if len(seen) == 3:
                    break
        finally:
            consumer.close()
        assert seen == [b"o-0", b"o-1", b"o-2"]
        logins = [r for r in b.requests(api="SaslAuthenticate") if r.user == "app" and r.error_code == 0]
        assert len(logins) >= 2


def test_vast_refuses_scram(vastfake_bin):
    with Broker(binary=vastfake_bin, topics=["orders:1"], args=USER) as b:
        with pytest.raises(kafka.errors.KafkaError):
            KafkaProducer(bootstrap_servers=b.bootstrap, client_id="scram-py", api_version_auto_timeout_ms=10000,
                          **SCRAM).close()
        refused = b.assert_refused("PlainSASLOnly")
        assert refused[0].message.endswith("(rule PlainSASLOnly): use SASL/PLAIN over TLS")
