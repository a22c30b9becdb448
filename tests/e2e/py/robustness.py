"""Generated hostile input, seeded: hundreds of malformed LDAP PDUs, each on a fresh connection
(and some pipelined on one), then checks that the server still answers, that its process
(SERVER_PID) is alive and that its resident memory stayed bounded.

Classes: every node of a set of template requests mutated (wrong tag, truncated length, length
short of the content, indefinite length, lengths of 2^31 and 2^63, length-of-length bombs, zero
length), truncated PDUs, random byte flips, filter bombs (deep AND/OR/NOT, wide OR, in the filter
and in the assertion control), bad UTF-8 in DNs and attribute names, zero-length elements, odd
message IDs, many controls and giant attribute lists.

Each PDU is sent, the write side is shut (so a server waiting for more bytes sees the end), and
everything the server sends until it closes is collected. Per class the script prints how many
PDUs were sent and how they were answered: result codes of the responses, "notice" for a Notice
of Disconnection, "closed" for a close. A connection the server leaves open after the client's
half-close, or a dead process, fails the run.
"""
import os
import random
import socket
import sys
import threading
from collections import Counter, defaultdict

from rawldap import (EXTENDED_RESPONSE, NOTICE_OF_DISCONNECTION, SEARCH_DONE, SEARCH_ENTRY,
                     Closed, Conn, bind, connect, integer, length, octets, search, tlv, present,
                     equality, process_alive)

SUFFIX = os.environ["SUFFIX"]
PID = os.environ["SERVER_PID"]
TARGET = sys.argv[1] if len(sys.argv) > 1 else "canopy"
RSS_GROWTH_LIMIT_KIB = 128 * 1024
rng = random.Random(20261121)


def rss_kib():
    with open("/proc/%s/status" % PID) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def alive():
    return process_alive(PID)


# A request as a tree: (tag, [children]) for constructed elements, (tag, bytes) for primitive ones.
def P(tag, value):
    return (tag, value.encode() if isinstance(value, str) else value)


def C(tag, *kids):
    return (tag, list(kids))


def INT(v, tag=0x02):
    return P(tag, v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True))


def encode(node, path=(), mutation=None):
    """BER of `node`; the element at `path` gets `mutation` (a function of tag, content)."""
    tag, body = node
    if isinstance(body, list):
        content = b"".join(encode(k, path + (i,), mutation) for i, k in enumerate(body))
    else:
        content = body
    if mutation is not None and mutation[0] == path:
        return mutation[1](tag, content)
    return bytes([tag]) + length(len(content)) + content


def paths(node, path=()):
    yield path
    tag, body = node
    if isinstance(body, list):
        for i, k in enumerate(body):
            yield from paths(k, path + (i,))


def msg(msgid, op, controls=None):
    kids = [INT(msgid), op]
    if controls is not None:
        kids.append(controls)
    return C(0x30, *kids)


def ctrl(oid, critical=None, value=None):
    kids = [P(0x04, oid)]
    if critical is not None:
        kids.append(P(0x01, b"\xff" if critical else b"\x00"))
    if value is not None:
        kids.append(P(0x04, value))
    return C(0x30, *kids)


USER = "uid=alice,ou=people," + SUFFIX
TEMPLATES = {
    "bind": msg(1, C(0x60, INT(3), P(0x04, USER), P(0x80, "alice-pw"))),
    "search": msg(2, C(0x63, P(0x04, SUFFIX), INT(2, 0x0A), INT(0, 0x0A), INT(10), INT(5),
                       P(0x01, b"\x00"),
                       C(0xA0, C(0xA3, P(0x04, "objectClass"), P(0x04, "person")),
                         C(0xA1, C(0xA4, P(0x04, "cn"), C(0x30, P(0x80, "al"), P(0x82, "e"))),
                           C(0xA2, P(0x87, "mail")))),
                       C(0x30, P(0x04, "cn"), P(0x04, "mail"))),
                  C(0xA0, ctrl("1.2.840.113556.1.4.319", True, b"\x30\x05\x02\x01\x05\x04\x00"))),
    "add": msg(3, C(0x68, P(0x04, "cn=new," + SUFFIX),
                    C(0x30, C(0x30, P(0x04, "objectClass"), C(0x31, P(0x04, "device"))),
                      C(0x30, P(0x04, "cn"), C(0x31, P(0x04, "new")))))),
    "modify": msg(4, C(0x66, P(0x04, USER),
                       C(0x30, C(0x30, INT(2, 0x0A),
                                 C(0x30, P(0x04, "description"), C(0x31, P(0x04, "x"))))))),
    "delete": msg(5, P(0x4A, "cn=nothing," + SUFFIX)),
    "modrdn": msg(6, C(0x6C, P(0x04, USER), P(0x04, "uid=alice2"), P(0x01, b"\x00"),
                       P(0x80, "ou=groups," + SUFFIX))),
    "compare": msg(7, C(0x6E, P(0x04, USER), C(0x30, P(0x04, "uid"), P(0x04, "alice")))),
    "extended": msg(8, C(0x77, P(0x80, "1.3.6.1.4.1.4203.1.11.1"),
                         P(0x81, b"\x30\x03\x80\x01\x78"))),
    "abandon": msg(9, INT(1, 0x50)),
}


def long_len(n, nbytes):
    return bytes([0x80 | nbytes]) + n.to_bytes(nbytes, "big")


MUTATIONS = {
    "wrong tag": lambda t, c: bytes([rng.choice([0x00, 0x05, 0x1F, 0x31, 0x42, 0x61, 0x7F, 0x9F,
                                                 0xBF, 0xFF])]) + length(len(c)) + c,
    "length past the content": lambda t, c: bytes([t]) + length(len(c) + 1 + rng.randrange(300)) + c,
    "length short of the content": lambda t, c: bytes([t]) + length(max(0, len(c) - 1)) + c,
    "indefinite length": lambda t, c: bytes([t]) + b"\x80" + c + b"\x00\x00",
    "length 2^31": lambda t, c: bytes([t]) + long_len(2 ** 31, 4) + c,
    "length 2^63": lambda t, c: bytes([t]) + long_len(2 ** 63, 8) + c,
    "length-of-length bomb": lambda t, c: bytes([t, rng.choice([0x85, 0x8F, 0xFE, 0xFF])])
    + b"\xff" * rng.randrange(0, 40) + c,
    "zero length": lambda t, c: bytes([t]) + b"\x00",
}

results = defaultdict(Counter)
sent = Counter()
failures = []


def outcome(conn, timeout=10):
    """How the server answered a connection whose write side is shut."""
    got = []
    closed = False
    try:
        while True:
            got.append(conn.recv(timeout))
    except Closed:
        closed = True
    except socket.timeout:
        pass
    except Exception as e:  # a response rawldap cannot parse is itself a finding
        return "unparsable response %s" % type(e).__name__
    conn.close()
    parts = []
    for m in got:
        if m.op == EXTENDED_RESPONSE and m.msgid == 0 and m.name == NOTICE_OF_DISCONNECTION:
            parts.append("notice")
        elif m.op == SEARCH_ENTRY:
            if "entries" not in parts:
                parts.append("entries")
        elif m.code is not None:
            parts.append("code %d" % m.code)
        else:
            parts.append("op 0x%02x" % m.op)
    parts.append("closed" if closed else "LEFT OPEN")
    return ", ".join(parts)


TRACE = os.environ.get("ROBUSTNESS_TRACE")


def attack(cls, data):
    sent[cls] += 1
    if TRACE:
        with open(TRACE, "a") as f:
            f.write("%s %s\n" % (cls, data[:400].hex()))
    conn = connect()
    conn.send(data)
    try:
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    what = outcome(conn)
    results[cls][what] += 1
    if "LEFT OPEN" in what or "unparsable" in what:
        failures.append("%s: %s" % (cls, what))
    if sum(sent.values()) % 50 == 0:
        check_serves("after %d PDUs" % sum(sent.values()))


def check_serves(when):
    conn = connect()
    conn.send(search(1, SUFFIX, present("objectClass"), scope=0, attrs=["dc"]))
    entries, code = 0, None
    try:
        while True:
            m = conn.recv()
            if m.op == SEARCH_ENTRY:
                entries += 1
            elif m.op == SEARCH_DONE:
                code = m.code
                break
    except (Closed, socket.timeout):
        pass
    conn.close()
    if entries != 1 or code != 0 or not alive():
        failures.append("%s: the server does not answer (entries %d, code %s, alive %s)"
                        % (when, entries, code, alive()))


rss_start = rss_kib()
rss_peak = rss_start

# 1. Every node of every template, every mutation.
for name, template in TEMPLATES.items():
    for path in paths(template):
        for mname, mutate in MUTATIONS.items():
            attack("mutated: " + mname, encode(template, path=path, mutation=(path, mutate)))
    rss_peak = max(rss_peak, rss_kib())

# 2. Truncated PDUs: every template cut at seeded points.
for name, template in TEMPLATES.items():
    whole = encode(template)
    for cut in sorted(set(rng.randrange(1, len(whole)) for _ in range(8))):
        attack("truncated", whole[:cut])

# 3. Random byte flips.
for _ in range(150):
    whole = bytearray(encode(rng.choice(list(TEMPLATES.values()))))
    for _ in range(rng.randrange(1, 4)):
        whole[rng.randrange(len(whole))] = rng.randrange(256)
    attack("random byte flips", bytes(whole))
rss_peak = max(rss_peak, rss_kib())


# 4. Filter bombs.
def nest(tag, inner, depth):
    out = inner
    for _ in range(depth):
        out = bytes([tag]) + length(len(out)) + out
    return out


def search_with(flt, msgid=2, controls=b"", base=SUFFIX, attrs=(b"1.1",)):
    body = (octets(base) + integer(2, 0x0A) + integer(0, 0x0A) + integer(0) + integer(0)
            + tlv(0x01, b"\x00") + flt + tlv(0x30, b"".join(octets(a) for a in attrs)))
    return tlv(0x30, integer(msgid) + tlv(0x63, body) + controls)


pres = present("objectClass")
for depth in (511, 512, 513, 5000, 40000):
    attack("filter bomb: deep AND", search_with(nest(0xA0, pres, depth)))
    attack("filter bomb: deep OR", search_with(nest(0xA1, pres, depth)))
    attack("filter bomb: deep NOT", search_with(nest(0xA2, pres, depth)))
for width in (1000, 15000):
    attack("filter bomb: wide OR",
           search_with(tlv(0xA1, b"".join(equality("uid", "u%d" % i) for i in range(width)))))
for depth in (100, 5000):
    assertion = tlv(0x30, octets("1.3.6.1.1.12") + tlv(0x01, b"\xff")
                    + octets(nest(0xA0, pres, depth)))
    attack("filter bomb: in the assertion control", search_with(pres, controls=tlv(0xA0, assertion)))

# 5. Bad UTF-8 in DNs and attribute names (valid BER: a result code is due).
BAD = [b"\xff\xfe", b"cn=\xc3\x28," + SUFFIX.encode(), b"\xed\xa0\x80=x", b"cn=a\x00b", b"\xc0\xaf"]
for bad in BAD:
    attack("bad UTF-8: search base", search_with(pres, base=bad))
    attack("bad UTF-8: bind DN", bind(1, bad, "x"))
    attack("bad UTF-8: attribute in filter", search_with(equality(bad, "x")))
    attack("bad UTF-8: requested attribute", encode(msg(2, C(
        0x63, P(0x04, SUFFIX), INT(2, 0x0A), INT(0, 0x0A), INT(0), INT(0), P(0x01, b"\x00"),
        P(0x87, "cn"), C(0x30, P(0x04, bad))))))
    attack("bad UTF-8: add", encode(msg(3, C(0x68, P(0x04, bad), C(0x30, C(0x30, P(0x04, bad),
                                                                            C(0x31, P(0x04, "x"))))))))
    attack("bad UTF-8: modify attribute", encode(msg(4, C(0x66, P(0x04, USER), C(0x30, C(
        0x30, INT(0, 0x0A), C(0x30, P(0x04, bad), C(0x31, P(0x04, "x")))))))))
    attack("bad UTF-8: delete", encode(msg(5, P(0x4A, bad))))
    attack("bad UTF-8: compare", encode(msg(7, C(0x6E, P(0x04, bad), C(0x30, P(0x04, bad),
                                                                        P(0x04, "x"))))))

# 6. Zero-length everything.
ZERO = [b"\x30\x00", tlv(0x30, integer(1) + b"\x60\x00"), tlv(0x30, integer(1) + b"\x63\x00"),
        tlv(0x30, integer(1) + b"\x66\x00"), tlv(0x30, integer(1) + b"\x68\x00"),
        tlv(0x30, integer(1) + b"\x6c\x00"), tlv(0x30, integer(1) + b"\x6e\x00"),
        tlv(0x30, integer(1) + b"\x77\x00"), tlv(0x30, integer(1) + b"\x77\x02\x80\x00"),
        tlv(0x30, integer(1) + b"\x4a\x00"), tlv(0x30, integer(1) + b"\x50\x00"),
        tlv(0x30, b"\x02\x00" + b"\x42\x00"), search_with(b"\xa0\x00"), search_with(b"\xa1\x00"),
        search_with(b"\xa2\x00"), search_with(b"\x87\x00"), search_with(b"\xa3\x00"),
        search_with(b"\xa4\x00"), search_with(b"\xa9\x00"), search_with(pres, controls=b"\xa0\x00"),
        search_with(pres, controls=tlv(0xA0, b"\x30\x00")),
        search_with(pres, controls=tlv(0xA0, tlv(0x30, b"\x04\x00"))),
        search_with(pres, controls=tlv(0xA0, tlv(0x30, b"\x04\x00\x01\x01\xff")))]
for data in ZERO:
    attack("zero-length elements", data)

# 7. Message IDs.
for msgid in (0, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 200, -1, -2 ** 31, -2 ** 63):
    attack("message IDs", search_with(pres, msgid=msgid))
attack("message IDs", tlv(0x30, b"\x02\x00" + tlv(0x42, b"")))
attack("message IDs", tlv(0x30, tlv(0x02, b"\x00" * 100) + tlv(0x4A, b"x")))

# 8. Many controls.
unknown = tlv(0x30, octets("1.2.3.4.5.6.7") + tlv(0x01, b"\x00"))
for n in (100, 3000, 12000):
    attack("many controls", search_with(pres, controls=tlv(0xA0, unknown * n)))
critical = tlv(0x30, octets("1.2.3.4.5.6.7") + tlv(0x01, b"\xff"))
attack("many controls", search_with(pres, controls=tlv(0xA0, unknown * 1000 + critical)))
paged = tlv(0x30, octets("1.2.840.113556.1.4.319") + octets(b"\x30\x05\x02\x01\x05\x04\x00"))
attack("many controls", search_with(pres, controls=tlv(0xA0, paged * 500)))

# 9. Giant attribute lists.
for n in (1000, 20000):
    attack("giant attribute lists: search", search_with(pres, attrs=[b"cn"] * n))
    attrs = b"".join(tlv(0x30, octets("x-attr-%d" % i) + tlv(0x31, octets("v")))
                     for i in range(n // 2))
    attack("giant attribute lists: add", tlv(0x30, integer(3) + tlv(
        0x68, octets("cn=giant," + SUFFIX) + tlv(0x30, attrs))))
    values = b"".join(octets("v%d" % i) for i in range(n))
    attack("giant attribute lists: modify values", tlv(0x30, integer(4) + tlv(0x66, octets(USER) + tlv(
        0x30, tlv(0x30, integer(0, 0x0A) + tlv(0x30, octets("description") + tlv(0x31, values)))))))
rss_peak = max(rss_peak, rss_kib())


# 10. Pipelined on one connection: hostile-but-valid BER among valid searches; each gets its answer.
def pipelined(cls, requests, expect_done):
    conn = connect()
    conn.sock.settimeout(60)
    def send_all():
        try:
            conn.sock.sendall(b"".join(requests))
        except OSError:
            pass  # closed by the server: counted below as missing answers

    writer = threading.Thread(target=send_all)
    writer.start()
    done = set()
    try:
        while len(done) < len(expect_done):
            m = conn.recv(60)
            if m.op != SEARCH_ENTRY and m.msgid != 0:
                done.add(m.msgid)
    except (Closed, socket.timeout):
        pass
    writer.join()
    conn.close()
    sent[cls] += len(requests)
    missing = len(set(expect_done) - done)
    results[cls]["%d answered, %d missing" % (len(done & set(expect_done)), missing)] += 1
    # slapd closes a connection whose deferred requests exceed conn_max_pending (100 when anonymous);
    # canopy stops reading instead (back-pressure) and answers every request.
    if missing and TARGET != "slapd":
        failures.append("%s: %d requests got no answer" % (cls, missing))


reqs, ids = [], []
for i in range(1, 601):
    kind = i % 4
    if kind == 0:
        reqs.append(search_with(pres, msgid=i))
    elif kind == 1:
        reqs.append(search_with(equality(b"\xff", "x"), msgid=i))
    elif kind == 2:
        reqs.append(encode(msg(i, P(0x4A, BAD[i % len(BAD)]))))
    else:
        reqs.append(search_with(pres, msgid=i, controls=tlv(0xA0, critical)))
    ids.append(i)
pipelined("pipelined: mixed hostile requests", reqs, ids)
many = [search_with(equality("uid", "alice"), msgid=i) for i in range(1, 3001)]
pipelined("pipelined: 3000 searches, past max_pending_per_connection", many, list(range(1, 3001)))
rss_peak = max(rss_peak, rss_kib())

check_serves("at the end")
rss_end = rss_kib()

total = sum(sent.values())
print("PDUs sent: %d" % total)
for cls in sorted(sent):
    answers = "; ".join("%s x%d" % (what, n) for what, n in sorted(results[cls].items()))
    print("%s: %d sent: %s" % (cls, sent[cls], answers))
growth = rss_peak - rss_start
print("RSS: start %d KiB, peak %d KiB, end %d KiB" % (rss_start, rss_peak, rss_end),
      file=sys.stderr)
if growth > RSS_GROWTH_LIMIT_KIB:
    failures.append("RSS grew by %d KiB (limit %d)" % (growth, RSS_GROWTH_LIMIT_KIB))
if not alive():
    failures.append("the server process is gone")
if total < 500:
    failures.append("only %d PDUs sent" % total)
for f in failures:
    print("FAILURE: " + f)
sys.exit(1 if failures else 0)
