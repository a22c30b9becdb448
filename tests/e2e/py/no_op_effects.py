"""No-Op writes leave no trace: while a refreshAndPersist sync search follows the directory, no-op
writes (a modify, an add, a delete, a rename, a group's new member) are answered noOperation, and
then one real modify is made. Prints the first change the sync search sees (the real one), the
memberOf values of the new member, and whether the suffix's contextCSN moved over the no-ops."""
import time

import ldap
from ldap.controls import LDAPControl
from ldap.syncrepl import SyncRequestControl

from common import root, SUFFIX, user_dn, error_name

NOOP = [LDAPControl("1.3.6.1.4.1.4203.666.5.2", True, None)]
watcher = root()
writer = root()


def context_csn():
    return watcher.search_s(SUFFIX, ldap.SCOPE_BASE, attrlist=["contextCSN"])[0][1].get("contextCSN")


msgid = watcher.search_ext(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"],
                           serverctrls=[SyncRequestControl(mode="refreshAndPersist")])
for _ in range(200):
    kind = watcher.result3(msgid, all=0, timeout=10)[0]
    if kind == ldap.RES_INTERMEDIATE:
        break
before = context_csn()
group = "cn=managers,ou=groups,%s" % SUFFIX
writes = [
    ("modify", lambda: writer.modify_ext_s(user_dn("alice"), [(ldap.MOD_REPLACE, "sn", [b"Zed"])], serverctrls=NOOP)),
    ("add", lambda: writer.add_ext_s("uid=zz,ou=people,%s" % SUFFIX, [("objectClass", [b"account"]), ("uid", [b"zz"])], serverctrls=NOOP)),
    ("delete", lambda: writer.delete_ext_s(user_dn("dave"), serverctrls=NOOP)),
    ("rename", lambda: writer.rename_s(user_dn("erin"), "uid=erin2", serverctrls=NOOP)),
    ("new member", lambda: writer.modify_ext_s(group, [(ldap.MOD_ADD, "member", [user_dn("bob").encode()])], serverctrls=NOOP)),
]
for label, call in writes:
    try:
        call()
        print("%s: success" % label)
    except ldap.LDAPError as e:
        print("%s: %s" % (label, error_name(e)))
time.sleep(0.3)
print("contextCSN unchanged by the no-ops: %s" % (context_csn() == before))
writer.modify_ext_s(user_dn("carol"), [(ldap.MOD_REPLACE, "description", [b"real"])])
kind, data = watcher.result3(msgid, all=0, timeout=10)[:2]
print("first change seen: %s" % [dn for dn, _ in data])
bob = writer.search_s(user_dn("bob"), ldap.SCOPE_BASE, attrlist=["memberOf"])[0][1]
print("bob's memberOf: %s" % sorted(bob.get("memberOf", [])))
watcher.abandon(msgid)
