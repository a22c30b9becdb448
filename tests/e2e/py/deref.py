"""The deref control's bad values, which ldapsearch cannot send: absent, empty, a list that holds
no specification, not BER, a specification without its attribute list or with an empty one, the
control twice, and the control on a compare."""
import ldap
from ldap.controls import RequestControl

from common import root, error_name, SUFFIX

DEREF = "1.3.6.1.4.1.4203.666.5.16"
GROUP = "cn=engineering,ou=groups,%s" % SUFFIX
conn = root()


def attempt(label, call):
    try:
        print("%s: success %s" % (label, call()))
    except ldap.LDAPError as e:
        info = e.args[0].get("info", "") if isinstance(e.args[0], dict) else ""
        print("%s: %s %r" % (label, error_name(e), info))


def search(value, times=1):
    found = conn.search_ext_s(GROUP, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"],
                              serverctrls=[RequestControl(DEREF, True, value)] * times)
    return [dn for dn, _ in found]


good = b"\x30\x11\x30\x0f\x04\x06member\x30\x05\x04\x03uid"
for label, value in (("no value", None), ("an empty value", b""), ("an empty list", b"\x30\x00"),
                     ("not BER", b"xx"), ("no attribute list", b"\x30\x0a\x30\x08\x04\x06member"),
                     ("an empty attribute list", b"\x30\x0c\x30\x0a\x04\x06member\x30\x00")):
    attempt(label, lambda: search(value))
attempt("twice", lambda: search(good, 2))
attempt("on a compare", lambda: conn.compare_ext_s(
    GROUP, "cn", b"engineering", serverctrls=[RequestControl(DEREF, True, good)]))
