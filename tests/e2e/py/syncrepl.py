"""RFC 4533 sync searches against the provider with python-ldap's SyncreplConsumer: a fresh refresh,
a refresh from a cookie with deletes, bad cookies and control values, persist-mode notifications,
and abandon of a persistent search. CSNs and entryUUIDs vary from run to run: only their shape and
the DNs they stand for are printed."""
import re
import time

import ldap
from ldap.controls import LDAPControl
from ldap.ldapobject import SimpleLDAPObject
from ldap.syncrepl import SyncreplConsumer

from common import SUFFIX, URL, ROOT_DN, ROOT_PW, error_name, root

SYNC_OID = "1.3.6.1.4.1.4203.1.9.1.1"
CSN = re.compile(r"\d{14}\.\d{6}Z#[0-9a-f]{6}#[0-9a-f]{3}#[0-9a-f]{6}")


def shape(cookie):
    """A cookie with its CSNs masked."""
    if cookie is None:
        return None
    if isinstance(cookie, bytes):
        cookie = cookie.decode()
    return CSN.sub("CSN", cookie)


class Consumer(SyncreplConsumer, SimpleLDAPObject):
    def __init__(self, *args, **kwargs):
        SimpleLDAPObject.__init__(self, *args, **kwargs)
        self.cookie = None
        self.by_uuid = {}
        self.added = []
        self.deleted = []
        self.present = 0
        self.refresh_done = False

    def syncrepl_get_cookie(self):
        return self.cookie

    def syncrepl_set_cookie(self, cookie):
        self.cookie = cookie

    def syncrepl_entry(self, dn, attrs, uuid):
        self.by_uuid[uuid] = dn
        self.added.append(dn)

    def syncrepl_delete(self, uuids):
        for uuid in uuids:
            self.deleted.append(self.by_uuid.pop(uuid, "(unknown %s)" % uuid))

    def syncrepl_present(self, uuids, refreshDeletes=False):
        if uuids is not None:
            self.present += len(uuids)

    def syncrepl_refreshdone(self):
        self.refresh_done = True

    def reset(self):
        self.added, self.deleted, self.present = [], [], 0


def consumer():
    c = Consumer(URL)
    c.protocol_version = 3
    c.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    c.simple_bind_s(ROOT_DN, ROOT_PW)
    return c


def refresh_only(c, base=SUFFIX):
    msgid = c.syncrepl_search(base, ldap.SCOPE_SUBTREE, mode="refreshOnly",
                              filterstr="(objectClass=*)", attrlist=["*", "+"])
    # Bounded: a refresh of this directory takes a few polls.
    for _ in range(10000):
        if not c.syncrepl_poll(all=1, msgid=msgid):
            break


admin = root()
people = "ou=people," + SUFFIX

# 1. A fresh consumer gets every entry of the scope as an add, and a cookie.
c = consumer()
refresh_only(c)
print("fresh refresh: %d entries, %d deletes, cookie %s" %
      (len(c.added), len(c.deleted), shape(c.cookie)))
fresh_count = len(c.added)

# 2. Changes, then a refresh from the cookie: the new and changed entries, and the deletes.
admin.add_s("cn=sync-new," + people, [("objectClass", [b"person"]), ("cn", [b"sync-new"]),
                                       ("sn", [b"N"])])
admin.modify_s("uid=bob," + people, [(ldap.MOD_REPLACE, "description", [b"changed"])])
admin.delete_s("cn=docs,ou=apollo,ou=projects," + SUFFIX)
admin.rename_s("uid=carol," + people, "uid=carol2")
c.reset()
refresh_only(c)
print("cookie refresh: added %s" % sorted(c.added))
print("cookie refresh: deleted %s" % sorted(c.deleted))
print("cookie refresh: cookie %s" % shape(c.cookie))

# 3. Nothing changed since the cookie: nothing is sent.
c.reset()
refresh_only(c)
print("unchanged refresh: %d entries, %d deletes" % (len(c.added), len(c.deleted)))

# 4. Bad cookies and control values.
for label, cookie in [("garbage", "garbage"), ("bad csn", "rid=001,csn=20260101"),
                      ("bad rid", "rid=abc"), ("rid only", "rid=005")]:
    b = consumer()
    b.cookie = cookie
    try:
        refresh_only(b)
        # slapd answers a cookie it cannot read at all with an empty one, canopy with its rid=000
        # form: only whether a full refresh came is compared.
        print("cookie %s: accepted, %d entries" % (label, len(b.added)))
    except ldap.LDAPError as e:
        print("cookie %s: %s" % (label, error_name(e)))


def raw_search(controls):
    try:
        res = admin.search_ext_s(SUFFIX, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"],
                                 serverctrls=controls)
        return "accepted, %d entries" % len(res)
    except ldap.LDAPError as e:
        return error_name(e)


ro = b"\x30\x03\x0a\x01\x01"
print("control without value: " + raw_search([LDAPControl(SYNC_OID, True, None)]))
print("control with empty value: " + raw_search([LDAPControl(SYNC_OID, True, b"")]))
print("control with mode 2: " + raw_search([LDAPControl(SYNC_OID, True, b"\x30\x03\x0a\x01\x02")]))
print("control not BER: " + raw_search([LDAPControl(SYNC_OID, True, b"\x04\x01")]))
print("control twice: " + raw_search([LDAPControl(SYNC_OID, True, ro),
                                      LDAPControl(SYNC_OID, True, ro)]))
try:
    admin.modify_ext_s("uid=bob," + people, [(ldap.MOD_REPLACE, "description", [b"x"])],
                       serverctrls=[LDAPControl(SYNC_OID, True, ro)])
    print("critical control on modify: accepted")
except ldap.LDAPError as e:
    print("critical control on modify: " + error_name(e))
admin.modify_ext_s("uid=bob," + people, [(ldap.MOD_REPLACE, "description", [b"y"])],
                   serverctrls=[LDAPControl(SYNC_OID, False, ro)])
print("non-critical control on modify: accepted")

# 5. A base outside the suffix.
b = consumer()
try:
    refresh_only(b, base="dc=elsewhere")
    print("base outside the suffix: accepted, %d entries" % len(b.added))
except ldap.LDAPError as e:
    print("base outside the suffix: " + error_name(e))

# 6. refreshAndPersist: the refresh, then each change as it is made.
p = consumer()
p.cookie = c.cookie
msgid = p.syncrepl_search(SUFFIX, ldap.SCOPE_SUBTREE, mode="refreshAndPersist",
                          filterstr="(objectClass=*)", attrlist=["*", "+"])
deadline = time.time() + 20
while not p.refresh_done and time.time() < deadline:
    p.syncrepl_poll(msgid=msgid, timeout=1)
print("persist: refresh done %s, %d entries" % (p.refresh_done, len(p.added)))
p.reset()
admin.add_s("cn=live," + people, [("objectClass", [b"person"]), ("cn", [b"live"]),
                                   ("sn", [b"L"])])
admin.modify_s("cn=live," + people, [(ldap.MOD_REPLACE, "sn", [b"L2"])])
admin.rename_s("cn=live," + people, "cn=live2", "ou=groups," + SUFFIX)
admin.delete_s("cn=live2,ou=groups," + SUFFIX)
deadline = time.time() + 20
while len(p.added) < 3 or len(p.deleted) < 1:
    if time.time() > deadline:
        break
    try:
        p.syncrepl_poll(msgid=msgid, timeout=1)
    except ldap.TIMEOUT:
        pass
print("persist: notified %s" % p.added)
print("persist: deleted %s" % p.deleted)
print("persist: cookie %s" % shape(p.cookie))

# 7. Abandon of the persistent search: the connection goes on.
p.abandon(msgid)
print("after abandon, whoami: %r" % p.whoami_s())
print("after abandon, search: %d entries" %
      len(p.search_s(people, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"])))
p.unbind_s()

# 8. A scope below the suffix: an entry renamed out of it is a delete, in a refresh from a cookie and
# in persist mode.
admin.add_s("cn=mover," + people, [("objectClass", [b"person"]), ("cn", [b"mover"]),
                                    ("sn", [b"M"])])
admin.add_s("cn=mover2," + people, [("objectClass", [b"person"]), ("cn", [b"mover2"]),
                                     ("sn", [b"M"])])
s = consumer()
refresh_only(s, base=people)
print("people refresh: %d entries" % len(s.added))
admin.rename_s("cn=mover," + people, "cn=mover", "ou=groups," + SUFFIX)
s.reset()
refresh_only(s, base=people)
print("people refresh after a rename out: added %s, deleted %s" % (s.added, s.deleted))
msgid = s.syncrepl_search(people, ldap.SCOPE_SUBTREE, mode="refreshAndPersist",
                          filterstr="(objectClass=*)", attrlist=["*", "+"])
s.refresh_done = False
deadline = time.time() + 20
while not s.refresh_done and time.time() < deadline:
    s.syncrepl_poll(msgid=msgid, timeout=1)
s.reset()
admin.rename_s("cn=mover2," + people, "cn=mover2", "ou=groups," + SUFFIX)
deadline = time.time() + 20
while not s.deleted and time.time() < deadline:
    try:
        s.syncrepl_poll(msgid=msgid, timeout=1)
    except ldap.TIMEOUT:
        pass
print("people persist after a rename out: added %s, deleted %s" % (s.added, s.deleted))
s.abandon(msgid)
s.unbind_s()
c.unbind_s()
admin.unbind_s()
print("fresh count was %d" % fresh_count)
