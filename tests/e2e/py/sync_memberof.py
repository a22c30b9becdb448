"""A persistent sync search on a provider with the memberof overlay: adding a group notifies the group
and the member whose memberOf the overlay changed (slapd's memberof makes an internal modify that
syncprov passes on)."""
import time

import ldap
from ldap.ldapobject import SimpleLDAPObject
from ldap.syncrepl import SyncreplConsumer

from common import SUFFIX, URL, ROOT_DN, ROOT_PW, root


class Consumer(SyncreplConsumer, SimpleLDAPObject):
    def __init__(self, *args, **kwargs):
        SimpleLDAPObject.__init__(self, *args, **kwargs)
        self.cookie = None
        self.entries = {}
        self.refresh_done = False

    def syncrepl_get_cookie(self):
        return self.cookie

    def syncrepl_set_cookie(self, cookie):
        self.cookie = cookie

    def syncrepl_entry(self, dn, attrs, uuid):
        self.entries[dn] = sorted(v.decode() for v in attrs.get("memberOf", []))

    def syncrepl_delete(self, uuids):
        pass

    def syncrepl_present(self, uuids, refreshDeletes=False):
        pass

    def syncrepl_refreshdone(self):
        self.refresh_done = True


c = Consumer(URL)
c.simple_bind_s(ROOT_DN, ROOT_PW)
msgid = c.syncrepl_search(SUFFIX, ldap.SCOPE_SUBTREE, mode="refreshAndPersist",
                          filterstr="(objectClass=*)", attrlist=["*", "memberOf"])
deadline = time.time() + 20
while not c.refresh_done and time.time() < deadline:
    c.syncrepl_poll(msgid=msgid, timeout=1)
c.entries = {}
alice = "uid=alice,ou=people," + SUFFIX
group = "cn=syncgroup,ou=groups," + SUFFIX
root().add_s(group, [("objectClass", [b"groupOfNames"]), ("cn", [b"syncgroup"]),
                     ("member", [alice.encode()])])
deadline = time.time() + 20
while (group not in c.entries or group not in c.entries.get(alice, [])) and time.time() < deadline:
    try:
        c.syncrepl_poll(msgid=msgid, timeout=1)
    except ldap.TIMEOUT:
        pass
for dn in sorted(c.entries):
    print("notified %s memberOf %s" % (dn, c.entries[dn]))
c.abandon(msgid)
c.unbind_s()
