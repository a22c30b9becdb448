"""Raw LDAP requests with controls, and a one-line account of each response, for scripts that
test what python-ldap would hide (result codes OpenLDAP adds, response values byte by byte).
"""
import os

from rawldap import (SEARCH_DONE, SEARCH_ENTRY, children, connect, integer, message, octets,
                     parse_tlv, tlv)

SUFFIX = os.environ["SUFFIX"]
ROOT = (os.environ["ROOT_DN"], os.environ["ROOT_PW"])
PEOPLE = "ou=people," + SUFFIX
TXN_START = "1.3.6.1.1.21.1"
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
