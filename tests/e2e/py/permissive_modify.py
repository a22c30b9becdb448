"""The Permissive Modify control (1.2.840.113556.1.4.1413) on modifies of alice: each change with
and without the control, its answer and alice's values after it; then bad uses of the control."""
import ldap
from ldap.controls import LDAPControl, RequestControl

from common import root, user_dn, error_name

PERMISSIVE = "1.2.840.113556.1.4.1413"
conn = root()
alice = user_dn("alice")


def attempt(label, call):
    try:
        call()
        print("%s: success" % label)
    except ldap.LDAPError as e:
        info = e.args[0].get("info", "") if isinstance(e.args[0], dict) else ""
        print("%s: %s %r" % (label, error_name(e), info))


def values():
    entry = conn.search_s(alice, ldap.SCOPE_BASE, attrlist=["sn", "description", "mail"])[0][1]
    return {k: sorted(v) for k, v in sorted(entry.items())}


cases = [
    ("add a present value and a new one", [(ldap.MOD_ADD, "sn", [b"ADAMS", b"Second"])]),
    ("delete a missing value", [(ldap.MOD_DELETE, "sn", [b"nothere"])]),
    ("delete a present and a missing value", [(ldap.MOD_DELETE, "sn", [b"Second", b"nothere"])]),
    ("delete a value of an absent attribute", [(ldap.MOD_DELETE, "description", [b"x"])]),
    ("delete an absent attribute", [(ldap.MOD_DELETE, "description", None)]),
    ("replace an absent attribute by nothing", [(ldap.MOD_REPLACE, "description", None)]),
    ("add a value twice", [(ldap.MOD_ADD, "sn", [b"x", b"x"])]),
    ("delete a present value in another case", [(ldap.MOD_DELETE, "mail", [b"ALICE@example.com"])]),
]
for label, mods in cases:
    for critical in (True, False):
        attempt("%s (%s)" % (label, "control" if critical else "none"),
                lambda: conn.modify_ext_s(alice, mods, serverctrls=[LDAPControl(PERMISSIVE, True, None)] if critical else []))
        print("  %s" % values())

attempt("with a value", lambda: conn.modify_ext_s(
    alice, [(ldap.MOD_REPLACE, "sn", [b"Adams"])], serverctrls=[RequestControl(PERMISSIVE, True, b"x")]))
attempt("twice", lambda: conn.modify_ext_s(
    alice, [(ldap.MOD_REPLACE, "sn", [b"Adams"])], serverctrls=[LDAPControl(PERMISSIVE, True, None)] * 2))
attempt("on an add", lambda: conn.add_ext_s(
    "uid=pp,ou=people,%s" % alice.split(",", 2)[2], [("objectClass", [b"account"]), ("uid", [b"pp"])],
    serverctrls=[LDAPControl(PERMISSIVE, True, None)]))
attempt("on a search", lambda: conn.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=[LDAPControl(PERMISSIVE, True, None)]))
