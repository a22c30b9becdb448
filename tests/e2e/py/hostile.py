"""Hostile input over raw sockets: malformed BER, oversized PDUs, a 10000-deep filter, invalid
DNs. After each attack a fresh connection must still get answers and the server process
(SERVER_PID) must still be running.

Where correct servers differ, the line printed is what both do: slapd closes the connection on
malformed BER, often without the Notice of Disconnection that canopy sends, so the notice is
optional, but if it comes it must be well-formed (message ID 0, the notice OID, protocolError).
"""
import os
import socket

from rawldap import (NOTICE_OF_DISCONNECTION, SEARCH_DONE, SEARCH_ENTRY, EXTENDED_RESPONSE,
                     and_, bind, connect, equality, integer, message, octets, present, search,
                     tlv, process_alive)

SUFFIX = os.environ["SUFFIX"]
PID = os.environ["SERVER_PID"]
PROTOCOL_ERROR = 2

# Larger than the anonymous limit of 262143 bytes, well below the bound limit of 4 MiB.
BIG = 300000


def is_notice(m):
    return (m.op == EXTENDED_RESPONSE and m.msgid == 0 and m.name == NOTICE_OF_DISCONNECTION
            and m.code == PROTOCOL_ERROR)


def describe_end(conn, timeout=10):
    """What the server did after an attack, in terms both servers share."""
    got, closed = conn.until_closed(timeout)
    conn.close()
    others = [m for m in got if not is_notice(m)]
    if others:
        return "unexpected answers %r" % others
    if not closed:
        return "connection left open for %ds" % timeout
    return "closed"


def alive():
    return process_alive(PID)


def still_serves():
    """A fresh connection reads the suffix entry; the process has not died."""
    conn = connect()
    conn.send(search(1, SUFFIX, present("objectClass"), scope=0, attrs=["dc"]))
    entries = 0
    while True:
        m = conn.recv()
        if m.op == SEARCH_ENTRY:
            entries += 1
        elif m.op == SEARCH_DONE:
            break
    conn.close()
    return "server answers (%d entry, code %d), process %s" % (
        entries, m.code, "alive" if alive() else "DEAD")


def attack(title, data, half_close=False):
    conn = connect()
    conn.send(data)
    if half_close:
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    print("%s: %s" % (title, describe_end(conn)))
    print("  " + still_serves())


def bound_conn(dn, pw):
    conn = connect()
    conn.send(bind(1, dn, pw))
    m = conn.recv()
    assert m.code == 0, "bind of %s failed: %r" % (dn, m)
    return conn


valid_bind = bind(1)

# Malformed BER.
attack("outer tag is an OCTET STRING, not a SEQUENCE", tlv(0x04, b"hello"))
attack("unknown protocolOp tag", message(1, tlv(0x7E, b"")))
attack("indefinite length", b"\x30\x80" + valid_bind[2:] + b"\x00\x00")
attack("length past the end, then half-close",
       b"\x30\x84\x00\x00\x10\x00" + integer(1) + b"\x60\x05", half_close=True)
attack("length of 2 GiB", b"\x30\x84\x7f\xff\xff\xff" + b"\x00" * 10)
attack("garbage bytes", bytes(range(256)))
attack("HTTP request, then half-close", b"GET / HTTP/1.0\r\n\r\n", half_close=True)
attack("SEQUENCE of garbage", tlv(0x30, b"\xff\xfe\xfd\x00\x01"))
attack("message without an operation", tlv(0x30, integer(1)))

# Oversized PDUs: the limit depends on whether the connection is bound.
# On an indexed attribute, so that the answer is quick on a debug build too.
big = search(2, SUFFIX, equality("uid", "a" * BIG), attrs=["1.1"])
print("PDU of %d bytes" % len(big))
attack("oversized PDU, anonymous", big)
for who, dn, pw in [("alice", "uid=alice,ou=people," + SUFFIX, "alice-pw"),
                    ("the root DN", os.environ["ROOT_DN"], os.environ["ROOT_PW"])]:
    conn = bound_conn(dn, pw)
    conn.send(big)
    m = conn.recv(30)
    print("same PDU after binding as %s: %s code %d" % (
        who, "search done" if m.op == SEARCH_DONE else "op 0x%02x" % m.op, m.code))
    conn.close()
print("  " + still_serves())

# A filter nested 10000 deep: refused with an error result or a disconnect, never a crash.
deep = present("objectClass")
for _ in range(10000):
    deep = and_(deep)
conn = connect()
conn.send(search(2, SUFFIX, deep, attrs=["1.1"]))
got, closed = conn.until_closed(10)
conn.close()
errors = [m for m in got if m.op == SEARCH_DONE and m.code != 0]
entries = [m for m in got if m.op == SEARCH_ENTRY]
if closed and not entries and all(is_notice(m) or m in errors for m in got):
    print("filter nested 10000 deep: refused")
elif errors and not entries:
    print("filter nested 10000 deep: refused")
else:
    print("filter nested 10000 deep: %r, closed=%s" % (got, closed))
print("  " + still_serves())

# Invalid DNs as the search base.
for base in ["not a dn", "=value," + SUFFIX, "dc=example,,dc=com", "cn=x+" + "," + SUFFIX]:
    conn = connect()
    conn.send(search(2, base, present("objectClass"), attrs=["1.1"]))
    m = conn.recv()
    print("search base %r: %s code %d" % (
        base, "search done" if m.op == SEARCH_DONE else "op 0x%02x" % m.op, m.code))
    conn.close()
print("  " + still_serves())
