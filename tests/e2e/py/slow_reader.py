"""A client that asks for every entry (as the root DN, so no size limit) and then stops reading
until the test writes a line on stdin; then it reads everything and counts.

The tiny receive buffer makes the server meet a full socket almost at once: from then on it must
hold back (back-pressure) instead of buffering the rest of the result in memory.
"""
import os
import sys

from rawldap import SEARCH_DONE, SEARCH_ENTRY, bind, connect, present, search

SUFFIX = os.environ["SUFFIX"]

conn = connect(rcvbuf=4096)
conn.send(bind(1, os.environ["ROOT_DN"], os.environ["ROOT_PW"]))
assert conn.recv().code == 0
conn.send(search(2, SUFFIX, present("objectClass")))
print("paused", flush=True)
sys.stdin.readline()
entries = 0
while True:
    m = conn.recv(30)
    if m.op == SEARCH_ENTRY:
        entries += 1
    elif m.op == SEARCH_DONE:
        print("search done: code %d, %d entries" % (m.code, entries))
        break
    else:
        print("unexpected %r" % m)
conn.close()
