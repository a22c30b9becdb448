"""LDAP transactions (RFC 5805) over raw sockets: Start Transaction, writes carrying the critical
Transaction Specification control, End Transaction committing or aborting. Prints each answer
(message ID, operation, result code, diagnostic text, the response value in hex) and what a
search finds afterwards, so the transcript shows what is queued, applied atomically or refused.
"""
import sys

from rawldap import equality, octets, present, tlv
from rawops import (PEOPLE, PRE_READ, TXN_START, Session, add, compare, control, delete,
                    end_value, extended, modify, modrdn, present_dns, search_body)

TXN_SPEC = "1.3.6.1.1.21.2"
TXN_END = "1.3.6.1.1.21.3"


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
