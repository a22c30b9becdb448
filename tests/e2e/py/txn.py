"""LDAP transactions (RFC 5805) over raw sockets: Start Transaction, writes carrying the critical
Transaction Specification control, End Transaction committing or aborting. Prints each answer
(message ID, operation, result code, diagnostic text, the response value in hex) and what a
search finds afterwards, so the transcript shows what is queued, applied atomically or refused.
"""
import os
import sys

from rawldap import (SEARCH_DONE, SEARCH_ENTRY, children, connect, equality, integer,
                     message, octets, parse_tlv, present, tlv)

SUFFIX = os.environ["SUFFIX"]
ROOT = (os.environ["ROOT_DN"], os.environ["ROOT_PW"])
PEOPLE = "ou=people," + SUFFIX

TXN_START = "1.3.6.1.1.21.1"
TXN_SPEC = "1.3.6.1.1.21.2"
TXN_END = "1.3.6.1.1.21.3"
PRE_READ = "1.3.6.1.1.13.1"
OPS = {0x61: "bind", 0x65: "search done", 0x67: "modify", 0x69: "add", 0x6B: "delete",
       0x6D: "modrdn", 0x6F: "compare", 0x78: "extended"}


def op_tag(raw):
    tag, s, e = parse_tlv(raw, 0)
    return children(raw, s, e)[1][0]


def describe(raw):
    """A stable one-line account of one response."""
    tag, s, e = parse_tlv(raw, 0)
    parts = children(raw, s, e)
    msgid = int.from_bytes(parts[0][1], "big", signed=True)
    op, body = parts[1]
    fields = children(body, 0, len(body))
    code = int.from_bytes(fields[0][1], "big")
    text = fields[2][1].decode()
    line = "%s #%d: code %d" % (OPS.get(op, hex(op)), msgid, code)
    if fields[1][1]:
        line += " matched [%s]" % fields[1][1].decode()
    if text:
        line += " (%s)" % text
    for ftag, value in fields[3:]:
        if ftag == 0x8A:
            line += ", name %s" % value.decode()
        elif ftag == 0x8B:
            line += ", value [%s]" % value.hex()
    if len(parts) > 2:
        line += ", %d response control(s)" % len(children(parts[2][1], 0, len(parts[2][1])))
    return line


def control(oid, value=None, critical=True):
    body = octets(oid)
    if critical:
        body += tlv(0x01, b"\xff")
    if value is not None:
        body += octets(value)
    return tlv(0x30, body)


def request(msgid, op, controls=()):
    body = integer(msgid) + op
    if controls:
        body += tlv(0xA0, b"".join(controls))
    return tlv(0x30, body)


def extended(oid, value=None):
    body = octets(oid, 0x80)
    if value is not None:
        body += octets(value, 0x81)
    return tlv(0x77, body)


def end_value(txn_id, commit=None):
    body = b""
    if commit is not None:
        body += tlv(0x01, b"\xff" if commit else b"\x00")
    return tlv(0x30, body + octets(txn_id))


def add(dn, cn):
    uid = dn.split(",")[0].split("=")[1]
    attrs = [("objectClass", ["inetOrgPerson"]), ("cn", [cn]), ("sn", ["T"]), ("uid", [uid])]
    body = b"".join(tlv(0x30, octets(a) + tlv(0x31, b"".join(octets(v) for v in vs)))
                    for a, vs in attrs)
    return tlv(0x68, octets(dn) + tlv(0x30, body))


def modify(dn, attr, value, operation=2):
    change = tlv(0x30, integer(operation, 0x0A) + tlv(0x30, octets(attr) + tlv(0x31, octets(value))))
    return tlv(0x66, octets(dn) + tlv(0x30, change))


def delete(dn):
    return octets(dn, 0x4A)


def modrdn(dn, new_rdn):
    return tlv(0x6C, octets(dn) + octets(new_rdn) + tlv(0x01, b"\xff"))


def compare(dn, attr, value):
    return tlv(0x6E, octets(dn) + tlv(0x30, octets(attr) + octets(value)))


def search_body(base, flt):
    return tlv(0x63, octets(base) + integer(2, 0x0A) + integer(0, 0x0A) + integer(0)
               + integer(0) + tlv(0x01, b"\x00") + flt + tlv(0x30, octets("1.1")))


class Session:
    def __init__(self, as_root=True, user=None):
        self.conn = connect()
        self.next = 1
        creds = user or (ROOT if as_root else None)
        if creds:
            assert op_tag(self.send(tlv(0x60, integer(3) + octets(creds[0])
                                        + octets(creds[1], 0x80)))) == 0x61

    def send(self, op, controls=()):
        msgid = self.next
        self.next += 1
        self.conn.send(request(msgid, op, controls))
        raw = self.conn.recv_raw()
        while op_tag(raw) in (SEARCH_ENTRY, 0x73):
            raw = self.conn.recv_raw()
        return raw

    def say(self, title, op, controls=()):
        print("%s: %s" % (title, describe(self.send(op, controls))))

    def start(self, title="start"):
        raw = self.send(extended(TXN_START))
        print("%s: %s" % (title, describe(raw)))
        tag, s, e = parse_tlv(raw, 0)
        body = children(raw, s, e)[1][1]
        for ftag, value in children(body, 0, len(body))[3:]:
            if ftag == 0x8B:
                return value
        return b""

    def close(self):
        self.conn.close()


def present_dns(base, flt):
    """The DNs a root search under `base` finds."""
    conn = connect()
    conn.send(tlv(0x30, integer(1) + tlv(0x60, integer(3) + octets(ROOT[0])
                                       + octets(ROOT[1], 0x80))))
    conn.recv()
    conn.send(message(2, search_body(base, flt)))
    dns = []
    while True:
        m = conn.recv()
        if m.op == SEARCH_ENTRY:
            dns.append(m.dn)
        elif m.op == SEARCH_DONE:
            break
    conn.close()
    return sorted(dns)


def spec(txn_id):
    return control(TXN_SPEC, txn_id)


def uid_dn(uid):
    return "uid=%s,%s" % (uid, PEOPLE)


def show(title, base=PEOPLE, flt=None):
    flt = flt if flt is not None else equality("sn", "T")
    print("%s: %s" % (title, present_dns(base, flt) or "none"))


def databases(glued):
    """A transaction may not span two databases: the main one and one glued below it."""
    s = Session()
    txn = s.start()
    s.say("modify alice (main database)", modify(uid_dn("alice"), "description", "two"),
          [spec(txn)])
    s.say("add the glued database's suffix entry",
          tlv(0x68, octets(glued) + tlv(0x30, tlv(0x30, octets("objectClass") + tlv(
              0x31, octets("organizationalUnit"))) + tlv(0x30, octets("ou") + tlv(
                  0x31, octets(glued.split(",")[0].split("=")[1]))))), [spec(txn)])
    s.say("end (commit)", extended(TXN_END, end_value(txn)))
    show("alice's description", flt=equality("description", "two"))
    show("the glued suffix", base=glued, flt=present("objectClass"))
    s.close()


if len(sys.argv) > 1:
    databases(sys.argv[1])
    sys.exit(0)

print("== a committed transaction")
s = Session()
txn = s.start()
s.say("start again while one is open", extended(TXN_START))
s.say("add t1 in the transaction", add(uid_dn("t1"), "T One"), [spec(txn)])
s.say("modify t1 in the transaction", modify(uid_dn("t1"), "description", "queued"), [spec(txn)])
s.say("modify alice in the transaction", modify(uid_dn("alice"), "description", "txn"),
      [spec(txn)])
s.say("rename t1 in the transaction", modrdn(uid_dn("t1"), "uid=t2"), [spec(txn)])
show("before the end, another connection sees")
s.say("search carrying the control", search_body(PEOPLE, present("objectClass")), [spec(txn)])
s.say("compare carrying the control", compare(uid_dn("alice"), "cn", "Alice Adams"), [spec(txn)])
s.say("non-critical control", modify(uid_dn("alice"), "title", "x"),
      [control(TXN_SPEC, txn, critical=False)])
s.say("control with another identifier", modify(uid_dn("alice"), "title", "x"),
      [spec(b"other")])
s.say("control without a value", modify(uid_dn("alice"), "title", "x"),
      [control(TXN_SPEC, None)])
s.say("control with a pre-read", modify(uid_dn("alice"), "title", "x"),
      [spec(txn), control(PRE_READ, tlv(0x30, octets("cn")))])
s.say("a write without the control applies at once", modify(uid_dn("bob"), "title", "direct"))
show("bob's title is set", flt=equality("title", "direct"))
s.say("end with another identifier", extended(TXN_END, end_value(b"other")))
s.say("end (commit)", extended(TXN_END, end_value(txn)))
show("after the commit")
show("alice's description", flt=equality("description", "txn"))
s.say("end again", extended(TXN_END, end_value(txn)))
s.say("the control after the end", modify(uid_dn("alice"), "title", "x"), [spec(txn)])
s.close()

print("== the third write fails: nothing is applied")
s = Session()
txn = s.start()
s.say("add t3", add(uid_dn("t3"), "T Three"), [spec(txn)])
s.say("modify alice", modify(uid_dn("alice"), "description", "atomic"), [spec(txn)])
s.say("modify a missing entry", modify(uid_dn("nobody"), "description", "x"), [spec(txn)])
s.say("add t4", add(uid_dn("t4"), "T Four"), [spec(txn)])
s.say("end (commit)", extended(TXN_END, end_value(txn, commit=True)))
show("after the failed commit")
show("alice's description", flt=equality("description", "atomic"))
s.say("a new transaction may start", extended(TXN_START))
s.close()

print("== a schema violation in the second write")
s = Session()
txn = s.start()
s.say("delete t2", delete(uid_dn("t2")), [spec(txn)])
s.say("add an entry without sn", tlv(0x68, octets(uid_dn("t5")) + tlv(0x30, tlv(
    0x30, octets("objectClass") + tlv(0x31, octets("inetOrgPerson")))
    + tlv(0x30, octets("cn") + tlv(0x31, octets("x"))))), [spec(txn)])
s.say("end (commit)", extended(TXN_END, end_value(txn)))
show("t2 is still there")
s.close()

print("== an aborted transaction")
s = Session()
txn = s.start()
s.say("delete t2", delete(uid_dn("t2")), [spec(txn)])
s.say("end (abort)", extended(TXN_END, end_value(txn, commit=False)))
show("t2 is still there")
s.close()

print("== an empty transaction")
s = Session()
txn = s.start()
s.say("end (commit)", extended(TXN_END, end_value(txn)))
s.close()

print("== errors")
s = Session()
s.say("end without a transaction", extended(TXN_END, end_value(b"")))
s.say("end without a value", extended(TXN_END))
s.say("end with a value that is not BER", extended(TXN_END, b"\x01\x02"))
s.say("start with a value", extended(TXN_START, b"x"))
s.say("the control without a transaction", modify(uid_dn("alice"), "title", "x"), [spec(b"")])
txn = s.start()
other = Session()
other.say("the control on another connection", modify(uid_dn("alice"), "title", "x"),
          [spec(txn)])
other.say("end on another connection", extended(TXN_END, end_value(txn)))
other.close()
s.say("delete t2 on the first", delete(uid_dn("t2")), [spec(txn)])
s.say("end on the first", extended(TXN_END, end_value(txn)))
show("t2 is gone")
s.close()

print("== anonymous")
s = Session(as_root=False)
txn = s.start("anonymous start")
s.say("anonymous modify", modify(uid_dn("alice"), "description", "anon"), [spec(txn)])
s.say("end (commit)", extended(TXN_END, end_value(txn)))
s.close()

print("== access control at the commit")
s = Session(user=(uid_dn("alice"), "alice-pw"))
txn = s.start("alice starts")
s.say("alice modifies her own description", modify(uid_dn("alice"), "description", "mine"),
      [spec(txn)])
s.say("end (commit)", extended(TXN_END, end_value(txn)))
s.close()
