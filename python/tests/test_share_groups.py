"""A share group (KIP-932, a queue; kafka profile) seen through the control
plane: each member's assignment, and per partition the start offset, the
records held with their delivery counts and lock deadlines and the archived
count; assert_share_acknowledged and wait_share_acknowledged; and the
at-least-once test of a queue on the manual clock: a worker hangs holding a
job, the clock passes its acquisition lock, another worker gets it again.

Debian's librdkafka (2.0.2) predates share consumers (librdkafka 2.15's
preview), so the two workers here speak the share protocol by hand on raw
sockets: ShareGroupHeartbeat to join, ShareFetch to acquire, and
ShareAcknowledge to accept."""

import datetime
import os
import socket
import struct

import pytest

from vastfake import Broker


def _uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _cstr(s):
    if s is None:
        return b"\x00"
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def _read_uvarint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, i
        shift += 7


def _read_cstr(buf, i):
    n, i = _read_uvarint(buf, i)
    if n == 0:
        return None, i
    return buf[i:i + n - 1].decode(), i + n - 1


class Worker:
    """One share group member on its own connection, as a share consumer
    sends its requests."""

    def __init__(self, bootstrap, group):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.group, self.epoch, self.session, self.corr = group, 0, 0, 0
        self.member_id = os.urandom(16).hex()[:22]  # the client's UUID
        self.topic_id = None

    def _send(self, api, version, body):
        self.corr += 1
        header = struct.pack(">hhi", api, version, self.corr) + struct.pack(">h", 7) + b"pyshare" + b"\x00"
        frame = header + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        buf = self._read(size)
        assert struct.unpack(">i", buf[:4])[0] == self.corr
        return buf, 5  # the correlation id and the header's empty tags

    def join(self, topic):
        """ShareGroupHeartbeat v1 at epoch 0; returns the error code and
        keeps the member's epoch and the topic id of its assignment."""
        body = _cstr(self.group) + _cstr(self.member_id) + struct.pack(">i", self.epoch) + _cstr(None)
        body += _uvarint(2) + _cstr(topic) + b"\x00"
        buf, i = self._send(76, 1, body)
        _throttle, code = struct.unpack(">ih", buf[i:i + 6])
        i += 6
        _msg, i = _read_cstr(buf, i)
        _member, i = _read_cstr(buf, i)
        self.epoch, _interval = struct.unpack(">ii", buf[i:i + 8])
        i += 8
        if code == 0 and buf[i] != 0xFF:
            i += 1
            n, i = _read_uvarint(buf, i)
            if n > 1:
                self.topic_id = buf[i:i + 16]
        return code

    def fetch(self, partition=0):
        """ShareFetch v1 of one partition (opening the session first);
        returns the top-level error code."""
        body = _cstr(self.group) + _cstr(self.member_id) + struct.pack(">iiiiii", self.session, 0, 1, 1 << 20, 100, 100)
        body += _uvarint(2) + self.topic_id + _uvarint(2) + struct.pack(">i", partition) + _uvarint(1) + b"\x00" + b"\x00"
        body += _uvarint(1) + b"\x00"
        buf, i = self._send(78, 1, body)
        _throttle, code = struct.unpack(">ih", buf[i:i + 6])
        if code == 0:
            self.session += 1
        return code

    def accept(self, first, last, partition=0):
        """ShareAcknowledge v1: accept offsets first to last; returns the
        partition's error code."""
        batch = struct.pack(">qq", first, last) + _uvarint(2) + b"\x01" + b"\x00"
        body = _cstr(self.group) + _cstr(self.member_id) + struct.pack(">i", self.session)
        body += _uvarint(2) + self.topic_id + _uvarint(2) + struct.pack(">i", partition) + _uvarint(2) + batch + b"\x00" + b"\x00"
        body += b"\x00"
        buf, i = self._send(79, 1, body)
        _throttle, code = struct.unpack(">ih", buf[i:i + 6])
        assert code == 0, "ShareAcknowledge error %d" % code
        self.session += 1
        i += 6
        _msg, i = _read_cstr(buf, i)
        i += 1  # the topics' length
        i += 16  # the topic id
        i += 1  # the partitions' length
        _p, pcode = struct.unpack(">ih", buf[i:i + 6])
        return pcode

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "the broker closed the connection"
            out += chunk
        return out

    def close(self):
        self.sock.close()


def _produce(bootstrap, topic, values):
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=bootstrap, api_version=(2, 5))
    for v in values:
        p.send(topic, value=v.encode(), partition=0)
    p.flush()
    p.close()


def test_share_queue_on_the_manual_clock(vastfake_bin):
    pytest.importorskip("kafka")
    with Broker(binary=vastfake_bin, profile="kafka", manual_clock=True, topics=["jobs:1"]) as b:
        hung = Worker(b.bootstrap, "workers")
        assert hung.join("jobs") == 0
        # The first fetch sets the share start offset (latest, the default of
        # share.auto.offset.reset); what is produced next is the queue's.
        assert hung.fetch() == 0
        _produce(b.bootstrap, "jobs", ["resize-image-42"])
        assert hung.fetch() == 0  # and hangs: it never acknowledges

        g = b.group("workers")
        assert g.group_protocol == "share"
        assert [m.assignment for m in g.members] == [{"jobs": [0]}]
        p = g.share_partition("jobs", 0)
        assert p.start_offset == 0
        [held] = p.acquired
        assert (held.first_offset, held.last_offset, held.delivery_count) == (0, 0, 1)
        assert held.member_id == hung.member_id and held.client_id == "pyshare"
        assert held.lock_deadline - b.clock().now == datetime.timedelta(seconds=30)
        with pytest.raises(AssertionError, match="start offset on jobs/0 is 0"):
            b.assert_share_acknowledged("workers", "jobs", 0, 0)

        other = Worker(b.bootstrap, "workers")
        assert other.join("jobs") == 0
        b.advance("30s")  # the hung worker's lock ends
        assert other.fetch() == 0
        [again] = b.group("workers").share_partition("jobs", 0).acquired
        assert (again.member_id, again.delivery_count) == (other.member_id, 2)
        assert other.accept(0, 0) == 0
        b.wait_share_acknowledged("workers", "jobs", 0, 0)
        p = b.group("workers").share_partition("jobs", 0)
        assert (p.start_offset, p.acknowledged, p.archived, p.acquired) == (1, 1, 0, [])
        # The hung worker's acknowledgement comes too late: the record is done.
        assert hung.accept(0, 0) == 121  # INVALID_RECORD_STATE
        hung.close()
        other.close()
