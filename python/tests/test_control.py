"""The control-plane client: every endpoint against a real broker, and the
contracts of record pages (Next-Offset) and audit findings against a stub
control plane that answers exactly as the contract says."""

import datetime
import http.server
import json
import threading
import urllib.parse

import pytest

import vastfake
from vastfake import Client, ControlPlaneError, go_duration

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def test_go_duration():
    assert go_duration("1m30s") == "1m30s"
    assert go_duration(1.5) == "1500000000ns"
    assert go_duration(datetime.timedelta(minutes=2)) == "120000000000ns"
    with pytest.raises(ValueError):
        go_duration(-1)


def test_every_endpoint(vastfake):
    admin = AdminClient({"bootstrap.servers": vastfake.bootstrap})
    admin.create_topics([NewTopic("ledger", num_partitions=2, replication_factor=1,
                                  config={"retention.ms": "3600000"})])["ledger"].result(30)
    p = Producer({"bootstrap.servers": vastfake.bootstrap, "enable.idempotence": False, "linger.ms": 0})
    for i in range(250):
        p.produce("ledger", key=b"k", value=b"v-%d" % i, partition=0, headers=[("h", b"\xff\x00")])
    assert p.flush(30) == 0
    del p, admin  # destroyed now, not after the session's broker stops

    topics = vastfake.topics()
    assert [t.name for t in topics] == ["ledger"]
    assert topics[0].configs.get("retention.ms") == "3600000"
    assert vastfake.end_offset("ledger", 0) == 250
    assert vastfake.end_offset("ledger", 1) == 0

    recs = vastfake.records("ledger", 0)  # three pages of 100
    assert [r.offset for r in recs] == list(range(250))
    assert recs[7].value == b"v-7" and recs[7].key == b"k"
    assert recs[7].headers == [("h", b"\xff\x00")]  # not UTF-8: sent as base64
    page, nxt = vastfake.records_page("ledger", 0, offset=240, limit=5)
    assert [r.offset for r in page] == [240, 241, 242, 243, 244] and nxt == 245
    assert [r.offset for r in vastfake.iter_records("ledger", 0, offset=200, page_size=30)] == list(range(200, 250))
    assert recs[0].timestamp.tzinfo is not None

    assert vastfake.health().status == "ok"
    assert vastfake.rules()["NoCompression"] is True
    assert vastfake.clock().manual is False
    with pytest.raises(ControlPlaneError, match="409 the broker runs on the wall clock") as e:
        vastfake.advance("1s")
    assert e.value.status == 409
    with pytest.raises(ControlPlaneError, match="404 no group nobody"):
        vastfake.group("nobody")
    assert vastfake.find_group("nobody") is None and vastfake.committed("nobody", "ledger", 0) is None

    assert {r.api for r in vastfake.requests()} >= {"CreateTopics", "Produce"}
    assert len(vastfake.requests(limit=1)) == 1
    vastfake.clear_requests()
    assert vastfake.requests(api="Produce") == []

    assert vastfake.latency("Metadata", "5ms") == "5ms"
    assert vastfake.latency("Metadata", 0) == "0s"
    assert vastfake.stale_end_offset(30) == "30s"
    assert vastfake.stale_end_offset(0) == "0s"
    assert vastfake.inject_fault("Fetch", "NOT_LEADER_FOR_PARTITION", topic="ledger", partition=0)["partitions"] == [0]
    assert vastfake.inject_fault("Fetch", 6, topic="ledger", partitions=[0, 1])["partitions"] == [0, 1]
    dropped = vastfake.inject_fault("Produce", topic="ledger", partitions=[1], count=1, drop_answer=True)
    assert dropped["dropAnswer"] is True and dropped["err"] == "" and dropped["partitions"] == [1]
    with pytest.raises(ValueError, match="drop_answer"):
        vastfake.inject_fault("Produce")
    with pytest.raises(ControlPlaneError, match="400 fault: unknown Kafka API"):
        vastfake.inject_fault("NoSuchAPI", "NOT_LEADER_FOR_PARTITION")
    vastfake.clear_faults()
    live = vastfake.live()
    assert [t["name"] for t in live["topics"]] == ["ledger"]
    vastfake.reset()
    assert vastfake.topics() == [] and vastfake.groups() == [] and vastfake.rebalances() == []


def test_findings_endpoint(vastfake):
    """GET /audit: empty on a quiet broker; a binary without it says so."""
    try:
        findings = vastfake.findings()
    except ControlPlaneError as e:
        assert e.status == 404
        assert "this vastfake binary has no such endpoint; it is older than the vastfake package" in str(e)
        return
    assert findings == []
    vastfake.assert_no_findings()


class Stub(http.server.BaseHTTPRequestHandler):
    """A control plane that serves GET and DELETE /audit and record pages
    from the class attributes, and records the requests it got and their
    Connection headers."""
    protocol_version = "HTTP/1.1"  # keep-alive unless the client says close
    findings = []
    dropped = 0  # distinct findings the broker did not keep
    records = []  # offsets
    next_header = True
    seen = []
    connection = []

    def do_DELETE(self):
        Stub.connection.append(self.headers.get("Connection"))
        if self.path != "/audit":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        Stub.findings = []
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "16")
        self.end_headers()
        self.wfile.write(b'{"status":"ok"}\n')

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        Stub.seen.append(self.path)
        Stub.connection.append(self.headers.get("Connection"))
        headers = {}
        if u.path == "/audit":
            body = {"findings": Stub.findings}
            if Stub.dropped:
                body["dropped"] = Stub.dropped
        elif u.path.endswith("/records"):
            off, limit = int(q["offset"][0]), int(q["limit"][0])
            page = [o for o in Stub.records if o >= off][:limit]
            body = [{"offset": o, "timestampMs": 0, "timestamp": "1970-01-01T00:00:00Z", "key": None,
                     "value": "r%d" % o} for o in page]
            rest = [o for o in Stub.records if o > (page[-1] if page else off)]
            if Stub.next_header and page and rest:
                headers["Next-Offset"] = str(rest[0])
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Stub.seen, Stub.connection = [], []
    try:
        yield Client("http://127.0.0.1:%d" % srv.server_address[1], timeout=5)
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(10)


def test_record_pages_follow_next_offset(stub):
    Stub.records = [0, 1, 2, 5, 6, 9, 10]  # gaps, as after compaction
    Stub.next_header = True
    assert [r.offset for r in stub.iter_records("t", 0, page_size=3)] == Stub.records
    assert [r.value for r in stub.records("t", 0)] == [b"r%d" % o for o in Stub.records]
    # Three pages, the last one short and without a header: no fourth request.
    assert [q.split("?")[1] for q in Stub.seen[:3]] == ["offset=0&limit=3", "offset=5&limit=3",
                                                         "offset=10&limit=3"]


def test_record_pages_without_next_offset(stub):
    """A binary without the header: a full page continues from its last
    offset + 1, a short (or empty) one ends."""
    Stub.records = list(range(6))
    Stub.next_header = False
    assert [r.offset for r in stub.iter_records("t", 0, page_size=3)] == list(range(6))
    assert [q.split("?")[1] for q in Stub.seen] == ["offset=0&limit=3", "offset=3&limit=3", "offset=6&limit=3"]


def test_findings_are_typed_and_asserted(stub):
    Stub.findings = [{
        "rule": "NoIdempotence", "kind": "refused", "source": "InitProducerID", "clientId": "orders-svc",
        "clientSoftware": "librdkafka", "clientVersion": "2.0.2", "topic": "orders", "group": "", "count": 3,
        "first": "2026-01-02T03:04:05.123456789Z", "last": "2026-01-02T03:04:06Z",
        "advice": "set enable.idempotence=false", "detail": "InitProducerID is not served",
    }]
    (f,) = stub.findings()
    assert (f.rule, f.kind, f.client_id, f.client_software, f.client_version, f.count) == \
        ("NoIdempotence", "refused", "orders-svc", "librdkafka", "2.0.2", 3)
    assert f.first == datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc)
    with pytest.raises(AssertionError) as e:
        stub.assert_no_findings()
    assert str(e.value) == ("1 audit finding:\n  NoIdempotence [refused] from orders-svc (librdkafka 2.0.2) on "
                            "topic orders, 3 times: InitProducerID is not served -- set enable.idempotence=false")
    Stub.dropped = 2
    with pytest.raises(AssertionError, match=r"^1 audit finding \(and 2 more the broker did not keep\):\n  NoIdem"):
        stub.assert_no_findings()
    Stub.dropped = 0
    stub.clear_findings()  # DELETE /audit
    assert Stub.findings == [] and stub.findings() == []
    stub.assert_no_findings()


def test_every_call_closes_its_connection(stub):
    """The control plane serves at most 64 connections at once: the client
    asks for each connection to be closed with its answer rather than kept
    alive, so that a test holds none of them between calls."""
    Stub.records = list(range(10))
    Stub.findings = []
    for _ in range(5):
        stub.records("t", 0)
        stub.findings()
        stub.clear_findings()
    assert len(Stub.connection) == 15 and set(Stub.connection) == {"close"}


def test_no_answer_is_an_error_not_a_hang():
    # Nothing listens on port 9 of 127.0.0.1 (discard is not served): an
    # immediate refusal, reported with the address.
    c = Client("http://127.0.0.1:9/", timeout=2)
    with pytest.raises(ControlPlaneError, match="no answer from the control plane at http://127.0.0.1:9/"):
        c.topics()


def test_wait_timeout_says_what_it_saw(vastfake):
    with pytest.raises(vastfake_wait_timeout()) as e:
        vastfake.wait_group_stable("billing", members=2, timeout=0.2)
    assert str(e.value) == "timed out after 0.2s waiting for group billing Stable with 2 members; " \
                           "last seen: no group billing"
    assert isinstance(e.value, AssertionError)


def vastfake_wait_timeout():
    assert vastfake.WaitTimeout is vastfake.WaitTimeoutError, "the old name stays, for the same class"
    return vastfake.WaitTimeoutError
