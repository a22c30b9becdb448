"""Answers that the server writes itself and answers its queue writes, on one connection, arrive whole and
in order: each search's entries before its SearchResultDone and nothing of it after, no message cut by
another.

`stalled`: 300 searches pipelined by the root DN to a client that does not read for a second (a 4 KiB
receive buffer), two small ones (one entry, answered at once) for every large one (every entry of the
suffix with two of 64 KiB, streamed from elsewhere), then everything read back slowly; then a search, an abandon of it and an
unbind sent in one write, read until the server closes.

`persist`: a refreshAndPersist sync search (RFC 4533) on a connection that then asks 30 base searches,
each right after another client changed the entry: every answer shows the change just made, and the
30 persist updates arrive whole, in the order of the changes, each showing its own change (the entry
as the change stored it, as slapd's syncprov sends it).
"""
import sys
import threading
import time

import ldap

from common import ROOT_DN, ROOT_PW, SUFFIX, URL, user_dn
from rawldap import (SEARCH_DONE, SEARCH_ENTRY, Message, abandon, bind, children, connect, equality,
                     message, octets, parse_tlv, present, search, tlv, unbind)

INTERMEDIATE = 0x79
SYNC_REQUEST = "1.3.6.1.4.1.4203.1.9.1.1"


def attributes(raw):
    """The attributes of a SearchResultEntry message: {type: [values]}."""
    _, s, e = parse_tlv(raw, 0)
    op = children(raw, s, e)[1][1]
    dn_and_attrs = children(op, 0, len(op))
    attrs = {}
    body = dn_and_attrs[1][1]
    for _, attr in children(body, 0, len(body)):
        parts = children(attr, 0, len(attr))
        name = parts[0][1].decode().lower()
        attrs[name] = [v.decode() for _, v in children(parts[1][1], 0, len(parts[1][1]))]
    return attrs


def recv_raw(conn, timeout=30):
    """The next message and its raw bytes."""
    return conn.recv_raw(timeout)


def drip(conn, timeout=30):
    """The next message, read 4 KiB at a time with a pause between reads: the server's socket stays
    nearly full, so its writes are often partial while more answers are produced."""
    return Message(conn.recv_raw(timeout, chunk=4096, pause=0.0002))


def count_alone(conn, msgid, req):
    conn.send(req)
    entries = 0
    while True:
        m = conn.recv(10)
        assert m.msgid == msgid, m
        if m.op == SEARCH_ENTRY:
            entries += 1
        elif m.op == SEARCH_DONE:
            assert m.code == 0, m
            return entries


def stalled():
    # Two entries of 64 KiB make every large answer larger than the kernel's socket buffers hold.
    writer = ldap.initialize(URL)
    writer.simple_bind_s(ROOT_DN, ROOT_PW)
    for n in (1, 2):
        writer.add_s("cn=big%d,%s" % (n, SUFFIX), [
            ("objectClass", [b"device"]), ("cn", [b"big%d" % n]),
            ("description", [(b"%d" % n) * 65536])])
    writer.unbind_s()
    small = lambda i: search(i, user_dn("alice"), equality("objectClass", "person"), scope=0)
    large = lambda i: search(i, SUFFIX, present("objectClass"))
    probe = connect()
    probe.send(bind(1, ROOT_DN, ROOT_PW))
    assert probe.recv().code == 0
    want_small = count_alone(probe, 2, small(2))
    want_large = count_alone(probe, 3, large(3))
    probe.close()
    assert want_small == 1 and want_large > 16, (want_small, want_large)

    # Bound: slapd closes an anonymous session with more than 100 requests pending, a bound one above 1000.
    conn = connect(rcvbuf=4096)
    conn.send(bind(1, ROOT_DN, ROOT_PW))
    assert conn.recv().code == 0
    total = 300
    kinds = {i: ("large" if i % 3 == 0 else "small") for i in range(2, total + 2)}
    requests = b"".join(large(i) if kinds[i] == "large" else small(i) for i in kinds)
    sender = threading.Thread(target=conn.send, args=(requests,))
    sender.start()
    time.sleep(1.0)
    entries = {i: 0 for i in kinds}
    done = set()
    problems = []
    while len(done) < total:
        m = drip(conn)
        if m.msgid not in kinds or m.msgid in done:
            problems.append("message after its answer or for no request: %r" % m)
        elif m.op == SEARCH_ENTRY:
            entries[m.msgid] += 1
        elif m.op == SEARCH_DONE:
            if m.code != 0:
                problems.append("search %d ended with %s" % (m.msgid, m.code))
            done.add(m.msgid)
        else:
            problems.append("unexpected %r" % m)
    sender.join(30)
    wrong = [i for i in kinds
             if entries[i] != (want_large if kinds[i] == "large" else want_small)]
    print("pipelined to a stalled reader: %d of %d answered, %d with the wrong number of entries"
          % (len(done), total, len(wrong)))
    print("problems: %s" % (problems[:3] or "none"))
    conn.close()

    # A search, an abandon of it and an unbind in one write: whatever comes is whole, then the close.
    conn = connect()
    conn.send(small(1) + abandon(2, 1) + unbind(3))
    got, closed = conn.until_closed(10)
    stray = [m for m in got if m.msgid != 1 or m.op not in (SEARCH_ENTRY, SEARCH_DONE)]
    print("search, abandon and unbind at once: closed %s, stray messages %s" % (closed, stray or "none"))


def sync_control():
    value = tlv(0x30, tlv(0x0A, b"\x03"))
    return tlv(0xA0, tlv(0x30, octets(SYNC_REQUEST) + tlv(0x01, b"\xff") + octets(value)))


def persist():
    conn = connect()
    conn.send(bind(1, ROOT_DN, ROOT_PW))
    assert conn.recv().code == 0
    body = (octets("ou=people," + SUFFIX) + tlv(0x0A, b"\x02") + tlv(0x0A, b"\x00") + tlv(0x02, b"\x00")
            + tlv(0x02, b"\x00") + tlv(0x01, b"\x00") + present("objectClass")
            + tlv(0x30, octets("description")))
    conn.send(message(2, tlv(0x63, body) + sync_control()))
    # The refresh: entries, then a Sync Info message that ends it.
    refreshed = 0
    while True:
        raw = recv_raw(conn)
        m = Message(raw)
        assert m.msgid == 2, m
        if m.op == INTERMEDIATE:
            break
        if m.op == SEARCH_ENTRY:
            refreshed += 1
    writer = ldap.initialize(URL)
    writer.simple_bind_s(ROOT_DN, ROOT_PW)
    rounds = 30
    updates = []
    fresh = 0
    for i in range(rounds):
        value = "round %02d" % i
        writer.modify_s(user_dn("alice"), [(ldap.MOD_REPLACE, "description", [value.encode()])])
        msgid = 100 + i
        conn.send(search(msgid, user_dn("alice"), present("objectClass"), scope=0,
                         attrs=("description",)))
        while True:
            raw = recv_raw(conn)
            m = Message(raw)
            if m.msgid == 2 and m.op == SEARCH_ENTRY:
                updates.append(attributes(raw).get("description"))
            elif m.msgid == 2 and m.op == INTERMEDIATE:
                continue
            elif m.msgid == msgid and m.op == SEARCH_ENTRY:
                if attributes(raw).get("description") == [value]:
                    fresh += 1
            elif m.msgid == msgid and m.op == SEARCH_DONE:
                assert m.code == 0, m
                break
            else:
                raise AssertionError("unexpected %r" % m)
    deadline = time.monotonic() + 20
    while len(updates) < rounds and time.monotonic() < deadline:
        raw = recv_raw(conn, max(0.1, deadline - time.monotonic()))
        m = Message(raw)
        if m.msgid == 2 and m.op == SEARCH_ENTRY:
            updates.append(attributes(raw).get("description"))
        elif not (m.msgid == 2 and m.op == INTERMEDIATE):
            raise AssertionError("unexpected %r" % m)
    # An update carries the entry as its change stored it: the k-th update shows the k-th round.
    rounds_seen = [int(u[0].split()[1]) if u and len(u) == 1 and u[0].startswith("round ") else -1
                   for u in updates]
    exact = rounds_seen == list(range(rounds))
    print("refresh: %s entries" % ("some" if refreshed > 0 else "no"))
    print("answers with the change just made: %d of %d" % (fresh, rounds))
    print("persist updates each showing its own change: %s (%d)" % (exact, len(updates)))
    conn.send(abandon(200, 2) + unbind(201))
    conn.until_closed(10)
    writer.unbind_s()


if __name__ == "__main__":
    {"stalled": stalled, "persist": persist}[sys.argv[1]]()
