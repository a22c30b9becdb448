"""A persistent sync search (RFC 4533) while transactions (RFC 5805, through `ldapmodify -E txn=`)
end: each write of a committed transaction is notified as a change of its own, in order. Then a
transaction whose last write fails, one aborted and a plain modify: the last line names the first
notification after the committed transaction (Canopy: the plain modify; slapd 2.5: a write of the
failed transaction, which it never applied)."""
import subprocess
import time

import ldap
from ldap.ldapobject import SimpleLDAPObject
from ldap.syncrepl import SyncreplConsumer

from common import ROOT_DN, ROOT_PW, SUFFIX, URL


class Consumer(SyncreplConsumer, SimpleLDAPObject):
    def __init__(self, *args, **kwargs):
        SimpleLDAPObject.__init__(self, *args, **kwargs)
        self.cookie = None
        self.seen = []
        self.refresh_done = False

    def syncrepl_get_cookie(self):
        return self.cookie

    def syncrepl_set_cookie(self, cookie):
        self.cookie = cookie

    def syncrepl_entry(self, dn, attrs, uuid):
        if self.refresh_done:
            values = sorted(v.decode() for v in attrs.get("description", []))
            self.seen.append("%s %s" % (dn, values))

    def syncrepl_delete(self, uuids):
        if self.refresh_done:
            self.seen.append("delete of %d entries" % len(uuids))

    def syncrepl_present(self, uuids, refreshDeletes=False):
        pass

    def syncrepl_refreshdone(self):
        self.refresh_done = True


def transaction(mode, ldif):
    done = subprocess.run(["ldapmodify", "-x", "-H", URL, "-D", ROOT_DN, "-w", ROOT_PW,
                           "-E", "txn=" + mode], input=ldif.encode(), capture_output=True)
    print("ldapmodify -E txn=%s: exit %d" % (mode, done.returncode))


def wait_for(c, msgid, count):
    deadline = time.time() + 20
    while len(c.seen) < count and time.time() < deadline:
        try:
            c.syncrepl_poll(msgid=msgid, timeout=1)
        except ldap.TIMEOUT:
            pass


COMMITTED = """dn: ou=synced,{s}
changetype: add
objectClass: organizationalUnit
ou: synced
description: one

dn: uid=alice,ou=people,{s}
changetype: modify
replace: description
description: two

dn: ou=synced,{s}
changetype: modify
replace: description
description: three
""".format(s=SUFFIX)

FAILING = """dn: uid=bob,ou=people,{s}
changetype: modify
replace: description
description: never

dn: uid=nobody,ou=people,{s}
changetype: delete
""".format(s=SUFFIX)

c = Consumer(URL)
c.simple_bind_s(ROOT_DN, ROOT_PW)
msgid = c.syncrepl_search(SUFFIX, ldap.SCOPE_SUBTREE, mode="refreshAndPersist",
                          filterstr="(objectClass=*)", attrlist=["description"])
deadline = time.time() + 20
while not c.refresh_done and time.time() < deadline:
    c.syncrepl_poll(msgid=msgid, timeout=1)
transaction("commit", COMMITTED)
wait_for(c, msgid, 3)
for line in c.seen:
    print("notified", line)
transaction("commit", FAILING)
transaction("abort", FAILING)
# A plain write after them: the next notification must be this one.
transaction_free = subprocess.run(
    ["ldapmodify", "-x", "-H", URL, "-D", ROOT_DN, "-w", ROOT_PW],
    input=("dn: uid=carol,ou=people,%s\nchangetype: modify\nreplace: description\n"
           "description: after\n" % SUFFIX).encode(), capture_output=True)
print("plain modify: exit %d" % transaction_free.returncode)
wait_for(c, msgid, 4)
# The last line differs between servers: the test compares it on its own.
print("next notified", c.seen[3] if len(c.seen) > 3 else "nothing")
c.abandon(msgid)
c.unbind_s()
