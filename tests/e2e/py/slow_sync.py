"""A refreshAndPersist consumer that stops reading once its refresh is done, until the test writes a
line on stdin; then it reads everything the provider kept for it and prints how its search ended.

The tiny receive buffer makes the provider meet a full socket at once: its persistent search must then
be dropped (and ended with a result the consumer retries) instead of queueing every change in memory
or holding up the writers.
"""
import os
import sys

from rawldap import SEARCH_DONE, SEARCH_ENTRY, bind, connect, message, octets, present, tlv

SUFFIX = os.environ["SUFFIX"]
SYNC_REQUEST = "1.3.6.1.4.1.4203.1.9.1.1"
INTERMEDIATE = 0x79

conn = connect(rcvbuf=4096)
conn.send(bind(1, os.environ["ROOT_DN"], os.environ["ROOT_PW"]))
assert conn.recv().code == 0
# SearchRequest (subtree, every attribute) with a critical Sync Request control, refreshAndPersist.
body = (octets(SUFFIX) + tlv(0x0A, b"\x02") + tlv(0x0A, b"\x00") + tlv(0x02, b"\x00")
        + tlv(0x02, b"\x00") + tlv(0x01, b"\x00") + present("objectClass")
        + tlv(0x30, octets("*") + octets("+")))
value = tlv(0x30, tlv(0x0A, b"\x03"))
control = tlv(0x30, octets(SYNC_REQUEST) + tlv(0x01, b"\xff") + octets(value))
conn.send(tlv(0x30, tlv(0x02, b"\x02") + tlv(0x63, body) + tlv(0xA0, control)))
entries = 0
while True:
    m = conn.recv(30)
    if m.op == SEARCH_ENTRY:
        entries += 1
    elif m.op == INTERMEDIATE:
        break
    else:
        print("unexpected during the refresh: %r" % m)
        sys.exit(1)
print("refreshed", flush=True)
sys.stdin.readline()
changes = 0
while True:
    m = conn.recv(60)
    if m.op == SEARCH_ENTRY:
        changes += 1
    elif m.op == SEARCH_DONE:
        print("search ended: code %d after %d changes" % (m.code, changes))
        break
conn.close()
