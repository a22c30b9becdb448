"""RFC 6171 Don't Use Copy on a compare, which ldapcompare cannot send: prints the outcome of a
compare of alice's uid with the control (critical), and of the same compare without it."""
import ldap
from ldap.controls import LDAPControl

from common import root, user_dn, error_name

conn = root()
for label, ctrls in (("with the control", [LDAPControl("1.3.6.1.1.22", True, None)]),
                     ("without", [])):
    try:
        same = conn.compare_ext_s(user_dn("alice"), "uid", b"alice", serverctrls=ctrls)
        print("%s: %s" % (label, "compareTrue" if same else "compareFalse"))
    except ldap.LDAPError as e:
        print("%s: %s" % (label, error_name(e)))
