"""The Subentries control's bad uses, which ldapsearch cannot send: values that are not one
BOOLEAN, the control twice, on a compare and a modify; and a BOOLEAN of 5 (TRUE)."""
import ldap
from ldap.controls import RequestControl

from common import root, user_dn, error_name, SUFFIX

SUBENTRIES = "1.3.6.1.4.1.4203.1.10.1"
conn = root()


def attempt(label, call):
    try:
        print("%s: success %s" % (label, call()))
    except ldap.LDAPError as e:
        info = e.args[0].get("info", "") if isinstance(e.args[0], dict) else ""
        print("%s: %s %r" % (label, error_name(e), info))


def search(value, times=1):
    found = conn.search_ext_s(SUFFIX, ldap.SCOPE_SUBTREE, "(cn=sub*)", ["1.1"],
                              serverctrls=[RequestControl(SUBENTRIES, True, value)] * times)
    return sorted(dn for dn, _ in found)


for label, value in (("no value", None), ("an empty value", b""), ("an octet string", b"\x04\x01\x00"),
                     ("a two-octet boolean", b"\x01\x02\x00\x00"), ("bytes after it", b"\x01\x01\x00\x00"),
                     ("a boolean of 5", b"\x01\x01\x05")):
    attempt(label, lambda: search(value))
attempt("twice", lambda: search(b"\x01\x01\xff", 2))
attempt("on a compare", lambda: conn.compare_ext_s(
    user_dn("alice"), "sn", b"Adams", serverctrls=[RequestControl(SUBENTRIES, True, b"\x01\x01\xff")]))
attempt("on a modify", lambda: conn.modify_ext_s(
    user_dn("alice"), [(ldap.MOD_REPLACE, "sn", [b"Adams"])],
    serverctrls=[RequestControl(SUBENTRIES, True, b"\x01\x01\xff")]))
