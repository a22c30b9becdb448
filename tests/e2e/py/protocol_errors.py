"""Requests that are valid BER but break a rule of RFC 4511: an enumeration value outside the
listed ones (scope, derefAliases and the modify operation are extensible enumerations), limits
below zero, an authentication choice the server does not know, an add without attributes, a
delete of the empty DN. OpenLDAP answers each with a result on the same connection and keeps the
session; the connection then answers a WhoAmI.
"""
import os

from rawldap import (EXTENDED_RESPONSE, SEARCH_ENTRY, Closed, bind, connect, integer, message,
                     octets, present, tlv, whoami)

SUFFIX = os.environ["SUFFIX"]
ROOT = (os.environ["ROOT_DN"], os.environ["ROOT_PW"])
OPS = {0x61: "bind", 0x65: "search done", 0x67: "modify", 0x69: "add", 0x6B: "delete",
       0x78: "extended"}


def search_body(base, scope=0, deref=0, size=0, time=0):
    return tlv(0x63, octets(base) + integer(scope, 0x0A) + integer(deref, 0x0A) + integer(size)
               + integer(time) + tlv(0x01, b"\x00") + present("objectClass")
               + tlv(0x30, octets("1.1")))


def modify_body(dn, operation):
    change = tlv(0x30, integer(operation, 0x0A)
                 + tlv(0x30, octets("description") + tlv(0x31, octets("x"))))
    return tlv(0x66, octets(dn) + tlv(0x30, change))


CASES = [
    ("search with scope 7", False, search_body(SUFFIX, scope=7)),
    ("search with derefAliases 9", False, search_body(SUFFIX, deref=9)),
    ("search with sizeLimit -1", False, search_body(SUFFIX, size=-1)),
    ("search with timeLimit -5", False, search_body(SUFFIX, time=-5)),
    ("bind with authentication choice [5]", False,
     tlv(0x60, integer(3) + octets("") + octets("", 0x85))),
    ("modify with operation 9, as root", True,
     modify_body("uid=alice,ou=people," + SUFFIX, 9)),
    ("add without attributes, as root", True,
     tlv(0x68, octets("cn=empty," + SUFFIX) + tlv(0x30, b""))),
    ("delete of the empty DN, as root", True, octets("", 0x4A)),
]

for title, as_root, op in CASES:
    conn = connect()
    if as_root:
        conn.send(bind(1, *ROOT))
        assert conn.recv().code == 0
    conn.send(message(2, op))
    answer = "closed without an answer"
    after = "connection closed"
    try:
        m = conn.recv()
        while m.op == SEARCH_ENTRY:
            m = conn.recv()
        if m.op == EXTENDED_RESPONSE and m.msgid == 0:
            answer = "notice of disconnection, code %s" % m.code
        else:
            answer = "%s, message %d, code %s" % (OPS.get(m.op, hex(m.op)), m.msgid, m.code)
        if conn.send(whoami(3)):
            after = "whoami code %d" % conn.recv().code
    except Closed:
        pass
    print("%s: %s; then %s" % (title, answer, after))
    conn.close()
