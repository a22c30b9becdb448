"""Hand-made LDAP messages over a raw socket, for what python-ldap cannot send or would hide:
malformed BER, oversized PDUs, deep filters, and counting exactly which responses arrive.

Only the BER subset LDAP uses (RFC 4511 section 5.1): single-byte tags, definite lengths.
"""
import os
import socket
import time
from urllib.parse import urlparse

NOTICE_OF_DISCONNECTION = "1.3.6.1.4.1.1466.20036"
WHOAMI = "1.3.6.1.4.1.4203.1.11.3"

# Protocol operation tags (RFC 4511 section 4.2 onwards).
BIND_RESPONSE = 0x61
SEARCH_ENTRY = 0x64
SEARCH_DONE = 0x65
SEARCH_REFERENCE = 0x73
EXTENDED_RESPONSE = 0x78


def length(n):
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag, content):
    return bytes([tag]) + length(len(content)) + content


def integer(v, tag=0x02):
    return tlv(tag, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))


def octets(s, tag=0x04):
    return tlv(tag, s.encode() if isinstance(s, str) else s)


def message(msgid, op):
    return tlv(0x30, integer(msgid) + op)


def bind(msgid, dn="", pw=""):
    return message(msgid, tlv(0x60, integer(3) + octets(dn) + octets(pw, 0x80)))


def present(attr):
    return octets(attr, 0x87)


def equality(attr, value):
    return tlv(0xA3, octets(attr) + octets(value))


def and_(*filters):
    return tlv(0xA0, b"".join(filters))


def search(msgid, base, flt, scope=2, attrs=(), sizelimit=0):
    body = (octets(base) + integer(scope, 0x0A) + integer(0, 0x0A) + integer(sizelimit)
            + integer(0) + tlv(0x01, b"\x00") + flt
            + tlv(0x30, b"".join(octets(a) for a in attrs)))
    return message(msgid, tlv(0x63, body))


def abandon(msgid, target):
    return message(msgid, integer(target, 0x50))


def whoami(msgid):
    return message(msgid, tlv(0x77, octets(WHOAMI, 0x80)))


def unbind(msgid):
    return message(msgid, b"\x42\x00")


def process_alive(pid):
    """Whether process `pid` exists and has not exited (a zombie counts as dead)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def server_address():
    url = urlparse(os.environ["LDAP_URL"])
    return url.hostname, url.port


def connect(rcvbuf=None):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        # Before connect, so the advertised window is small from the start.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect(server_address())
    return Conn(sock)


def parse_tlv(buf, pos):
    """(tag, content start, content end) of the element at pos, or None if incomplete."""
    if pos + 2 > len(buf):
        return None
    tag = buf[pos]
    first = buf[pos + 1]
    pos += 2
    if first & 0x80:
        count = first & 0x7F
        if pos + count > len(buf):
            return None
        n = int.from_bytes(buf[pos:pos + count], "big")
        pos += count
    else:
        n = first
    if pos + n > len(buf):
        return None
    return tag, pos, pos + n


def children(buf, start, end):
    out = []
    while start < end:
        tag, s, e = parse_tlv(buf, start)
        out.append((tag, buf[s:e]))
        start = e
    return out


class Message:
    """One received LDAPMessage: id, operation tag, and for results the code and name."""

    def __init__(self, raw):
        tag, s, e = parse_tlv(raw, 0)
        parts = children(raw, s, e)
        self.msgid = int.from_bytes(parts[0][1], "big", signed=True)
        self.op, body = parts[1]
        self.code = None
        self.name = None
        self.value = None
        self.dn = None
        if self.op in (BIND_RESPONSE, SEARCH_DONE, EXTENDED_RESPONSE, 0x67, 0x69, 0x6B, 0x6D, 0x6F):
            fields = children(body, 0, len(body))
            self.code = int.from_bytes(fields[0][1], "big")
            for ftag, value in fields[3:]:
                if ftag == 0x8A:
                    self.name = value.decode()
                elif ftag == 0x8B:
                    self.value = value
        elif self.op == SEARCH_ENTRY:
            self.dn = children(body, 0, len(body))[0][1].decode()

    def __repr__(self):
        if self.op == EXTENDED_RESPONSE and self.msgid == 0:
            return "notice of disconnection (name %s, code %s)" % (self.name, self.code)
        return "message %d op 0x%02x code %s" % (self.msgid, self.op, self.code)


class Closed(Exception):
    """The server closed the connection (EOF or reset)."""


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def send(self, data):
        """Sends everything; returns False when the server closed or reset the connection."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def recv(self, timeout=10):
        """The next message; raises Closed at EOF or reset, socket.timeout after `timeout`."""
        return Message(self.recv_raw(timeout))

    def recv_raw(self, timeout=10, chunk=65536, pause=0.0):
        """The next message's raw bytes, reading at most `chunk` bytes at a time with `pause` seconds
        between reads (a slow reader); raises Closed at EOF or reset, socket.timeout after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            found = parse_tlv(self.buf, 0)
            if found is not None:
                end = found[2]
                raw, self.buf = self.buf[:end], self.buf[end:]
                return raw
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            self.sock.settimeout(left)
            try:
                got = self.sock.recv(chunk)
            except ConnectionResetError:
                raise Closed()
            if not got:
                raise Closed()
            self.buf += got
            if pause:
                time.sleep(pause)

    def until_closed(self, timeout=10):
        """Everything the server sends until it closes: (messages, closed?)."""
        got = []
        try:
            while True:
                got.append(self.recv(timeout))
        except Closed:
            return got, True
        except socket.timeout:
            return got, False

    def close(self):
        self.sock.close()
