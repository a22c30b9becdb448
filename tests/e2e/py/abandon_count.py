"""Abandon stops a running search: read a few entries of a search of the whole directory, abandon
it, and count what still arrives before the answer to a following WhoAmI on the same connection.

Prints stable lines for the transcript and last `entries-received N` for the test to judge.
"""
import os

import ldap

from common import SUFFIX, root
from rawldap import (SEARCH_DONE, SEARCH_ENTRY, abandon, bind, connect, present, search,
                     whoami)

# python-ldap, asynchronously: the client library's own abandon.
conn = root()
msgid = conn.search(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"])
got = 0
while got < 5:
    kind, data = conn.result(msgid, all=0, timeout=10)
    assert kind == ldap.RES_SEARCH_ENTRY, kind
    got += len(data)
conn.abandon(msgid)
print("python-ldap: read %d entries, abandoned" % got)
print("python-ldap: whoami after abandon: %s" % conn.whoami_s())
conn.unbind_s()

# Raw socket, to see every message the server still sends for the abandoned search. A small
# receive buffer keeps the kernel from soaking up the whole result before the abandon.
raw = connect(rcvbuf=32768)
raw.send(bind(1, os.environ["ROOT_DN"], os.environ["ROOT_PW"]))
assert raw.recv().code == 0
raw.send(search(2, SUFFIX, present("objectClass"), attrs=["1.1"]))
entries = 0
while entries < 5:
    m = raw.recv()
    assert m.msgid == 2 and m.op == SEARCH_ENTRY, m
    entries += 1
raw.send(abandon(3, 2))
raw.send(whoami(4))
done = None
while True:
    m = raw.recv(30)
    if m.msgid == 2 and m.op == SEARCH_ENTRY:
        entries += 1
    elif m.msgid == 2 and m.op == SEARCH_DONE:
        done = m
    elif m.msgid == 4:
        print("raw: whoami after abandon: code %d" % m.code)
        break
    else:
        print("raw: unexpected %r" % m)
print("raw: search done after abandon: %s" % ("code %d" % done.code if done else "none"))
raw.close()
print("entries-received %d" % entries)
