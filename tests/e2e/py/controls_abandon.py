"""Controls (critical and not) and abandon, through python-ldap's own request encoding."""
import ldap
from ldap.controls import LDAPControl

from common import SUFFIX, connect, error_name, root

conn = connect()
base = "ou=people," + SUFFIX

# An unknown non-critical control is ignored.
res = conn.search_ext_s(base, ldap.SCOPE_ONELEVEL, "(uid=alice)", ["uid"],
                        serverctrls=[LDAPControl("1.2.3.4", False, None)])
print("non-critical unknown control: %d entries" % len(res))

# An unknown critical control fails the operation with unavailableCriticalExtension (12).
try:
    conn.search_ext_s(base, ldap.SCOPE_ONELEVEL, "(uid=alice)", ["uid"],
                      serverctrls=[LDAPControl("1.2.3.4", True, None)])
    print("critical unknown control: accepted")
except ldap.LDAPError as e:
    print("critical unknown control: " + error_name(e))

# Also on a write operation.
admin = root()
try:
    admin.modify_ext_s("uid=alice," + base, [(ldap.MOD_REPLACE, "description", [b"x"])],
                       serverctrls=[LDAPControl("1.2.3.4", True, None)])
    print("critical unknown control on modify: accepted")
except ldap.LDAPError as e:
    print("critical unknown control on modify: " + error_name(e))
print("description after refused modify: %r" %
      admin.search_s("uid=alice," + base, ldap.SCOPE_BASE, attrlist=["description"])[0][1])

# Abandon a running search; the connection stays usable and answers the next request.
msgid = conn.search(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)")
conn.abandon(msgid)
print("after abandon, whoami: %r" % conn.whoami_s())
res = conn.search_s(base, ldap.SCOPE_BASE, "(objectClass=*)", ["ou"])
print("after abandon, search: %r" % res)
conn.unbind_s()
print("unbind: ok")
