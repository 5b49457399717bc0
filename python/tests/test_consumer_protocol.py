"""A KIP-848 consumer group (group.protocol=consumer) seen through the
control plane: the group's protocol and epochs, each member's current and
target assignment, the partitions waiting to be revoked, and
wait_group_reconciled.

Debian's librdkafka (2.0.2) predates KIP-848, so the two members here are
driven by hand with ConsumerGroupHeartbeat v0 requests on raw sockets, the
way a client reconciles: join, learn the new assignment, revoke, heartbeat
again."""

import socket
import struct

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


class Member:
    """One KIP-848 member on its own connection."""

    def __init__(self, bootstrap, group):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.group, self.member_id, self.epoch, self.corr = group, "", 0, 0
        self.owned = None  # [(topic id, [partitions])] from the last assignment

    def heartbeat(self, topics=None, owned=None, join=False):
        """Send a heartbeat; owned None means unchanged. Returns the error
        code and updates the member's id, epoch and assignment."""
        self.corr += 1
        body = _cstr(self.group) + _cstr(self.member_id) + struct.pack(">i", self.epoch)
        body += _cstr(None) + _cstr(None) + struct.pack(">i", 30000 if join else -1)
        body += b"\x00" if topics is None else _uvarint(len(topics) + 1) + b"".join(_cstr(t) for t in topics)
        body += _cstr(None)
        if owned is None:
            body += b"\x00"
        else:
            body += _uvarint(len(owned) + 1)
            for tid, parts in owned:
                body += tid + _uvarint(len(parts) + 1) + b"".join(struct.pack(">i", p) for p in parts) + b"\x00"
        body += b"\x00"
        header = struct.pack(">hhi", 68, 0, self.corr) + struct.pack(">h", 5) + b"py848" + b"\x00"
        frame = header + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self._read(4))[0]
        buf = self._read(size)
        assert struct.unpack(">i", buf[:4])[0] == self.corr
        i = 5  # correlation id and the header's empty tags
        _throttle, code = struct.unpack(">ih", buf[i:i + 6])
        i += 6
        _msg, i = _read_cstr(buf, i)
        member_id, i = _read_cstr(buf, i)
        epoch, _interval = struct.unpack(">ii", buf[i:i + 8])
        i += 8
        if code != 0:
            return code
        self.member_id, self.epoch = member_id, epoch
        if buf[i] != 0xFF:  # a nullable struct: -1 for null
            i += 1
            n, i = _read_uvarint(buf, i)
            assignment = []
            for _ in range(n - 1):
                tid = buf[i:i + 16]
                i += 16
                m, i = _read_uvarint(buf, i)
                parts = list(struct.unpack(">%di" % (m - 1), buf[i:i + 4 * (m - 1)]))
                i += 4 * (m - 1) + 1  # and the topic's tags
                assignment.append((tid, parts))
            self.owned = assignment
        return 0

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "the broker closed the connection"
            out += chunk
        return out

    def close(self):
        self.sock.close()


def test_consumer_group_reconciles(vastfake_bin):
    with Broker(binary=vastfake_bin, profile="kafka", topics=["t848:2"]) as b:
        a = Member(b.bootstrap, "g848")
        assert a.heartbeat(topics=["t848"], owned=[], join=True) == 0
        g = b.wait_group_reconciled("g848", members=1)
        assert g.group_protocol == "consumer"
        assert (g.group_epoch, g.assignment_epoch) == (1, 1)
        assert g.protocol == "uniform"
        [m] = g.members
        assert m.member_epoch == 1 and m.member_state == "STABLE"
        assert m.assignment == {"t848": [0, 1]} == m.target_assignment
        assert m.revoking is None

        # A second member: a must give one partition up before b gets it.
        c = Member(b.bootstrap, "g848")
        assert c.heartbeat(topics=["t848"], owned=[], join=True) == 0
        assert a.heartbeat() == 0
        g = b.group("g848")
        assert not g.reconciled and g.state == "Reconciling"
        assert g.group_epoch == 2 and g.assignment_epoch == 2
        ma = next(m for m in g.members if m.member_id == a.member_id)
        assert ma.member_state == "UNREVOKED_PARTITIONS"
        assert sum(len(ps) for ps in ma.revoking.values()) == 1
        assert sum(len(ps) for ps in ma.assignment.values()) == 1
        # a revokes (reports only what it kept); c then gets the partition.
        assert a.heartbeat(owned=a.owned) == 0
        assert c.heartbeat(owned=c.owned or []) == 0
        g = b.wait_group_reconciled("g848", members=2)
        for m in g.members:
            assert m.member_epoch == 2 and m.assignment == m.target_assignment and m.revoking is None
        assert sorted(p for m in g.members for p in m.assignment["t848"]) == [0, 1]
        a.close()
        c.close()
