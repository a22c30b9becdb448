"""Pipelining on one connection and many connections at once."""
import threading

import ldap

from common import SUFFIX, connect, user_dn

UIDS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "olivia"]

# Pipelining: send every request before reading any answer, then read them out of order.
conn = connect()
msgids = [(uid, conn.search(user_dn(uid), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"]))
          for uid in UIDS * 4]
ok = 0
for uid, msgid in reversed(msgids):
    _, data = conn.result(msgid)
    if data == [(user_dn(uid), {"uid": [uid.encode()]})]:
        ok += 1
print("pipelined searches answered correctly: %d of %d" % (ok, len(msgids)))

# Many connections, each binding as its own user and working concurrently.
results = {}
errors = []


def worker(uid):
    try:
        c = connect(user_dn(uid), uid + "-pw")
        n = 0
        for _ in range(15):
            me = c.whoami_s()
            found = c.search_s("ou=people," + SUFFIX, ldap.SCOPE_ONELEVEL, "(uid=%s)" % uid, ["1.1"])
            same = c.compare_s(user_dn(uid), "uid", uid.encode())
            if me == "dn:" + user_dn(uid) and len(found) == 1 and same:
                n += 1
        c.unbind_s()
        results[uid] = n
    except ldap.LDAPError as e:
        errors.append("%s: %r" % (uid, e))


threads = [threading.Thread(target=worker, args=(uid,)) for uid in UIDS for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
print("connections: %d, errors: %s" % (len(threads), errors or "none"))
for uid in UIDS:
    print("%s: %s rounds ok" % (uid, results.get(uid)))
