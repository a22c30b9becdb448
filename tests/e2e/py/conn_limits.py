"""Connection limits over raw sockets. Usage: conn_limits.py total N | per_ip N | idle SECONDS.

total N: N connections are admitted (each answers a search); one more gets a Notice of
Disconnection with busy (51) and is closed; after one of the N closes, a new one is admitted.
per_ip N: as total for 127.0.0.1, while a connection from 127.0.0.2 is still admitted.
idle SECONDS: a silent connection is closed with a Notice of Disconnection (unavailable, 52)
after about SECONDS; one that sends a request every SECONDS/2 stays open meanwhile.
"""
import socket
import sys
import time

from rawldap import (EXTENDED_RESPONSE, NOTICE_OF_DISCONNECTION, SEARCH_DONE, Closed, Conn,
                     present, search, server_address)

SUFFIX = "dc=example,dc=com"


def open_from(source="127.0.0.1"):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(server_address())
    return Conn(sock)


def answers(conn, msgid=1):
    """Whether a base search on the connection gets its SearchResultDone."""
    if not conn.send(search(msgid, SUFFIX, present("objectClass"), scope=0, attrs=["1.1"])):
        return False
    try:
        while True:
            m = conn.recv(10)
            if m.op == SEARCH_DONE:
                return m.code == 0
    except (Closed, socket.timeout):
        return False


def refusal(conn):
    """How the server treated a connection: 'notice CODE, closed', 'closed' or 'open'."""
    got, closed = conn.until_closed(5)
    conn.close()
    notices = ["notice %d" % m.code for m in got
               if m.op == EXTENDED_RESPONSE and m.msgid == 0 and m.name == NOTICE_OF_DISCONNECTION]
    return ", ".join(notices + ["closed" if closed else "open"])


def wait_for_count_to_settle():
    # The harness's own probes (start-up check, loading the base) may still be closing.
    time.sleep(1)


def limit_test(n, source_of_extra):
    wait_for_count_to_settle()
    held = [open_from() for _ in range(n)]
    print("%d connections answer: %s" % (n, all(answers(c) for c in held)))
    print("connection %d from 127.0.0.1: %s" % (n + 1, refusal(open_from())))
    if source_of_extra:
        other = open_from(source_of_extra)
        print("connection from %s answers: %s" % (source_of_extra, answers(other)))
        other.close()
    held.pop().close()
    time.sleep(0.5)
    again = open_from()
    print("after one closed, a new connection answers: %s" % answers(again))
    again.close()
    for c in held:
        c.close()


def idle_test(seconds):
    quiet = open_from()
    busy = open_from()
    answers(quiet)
    start = time.monotonic()
    ok = True
    msgid = 1
    while time.monotonic() - start < seconds * 2:
        time.sleep(seconds / 2)
        msgid += 1
        ok = ok and answers(busy, msgid)
    print("a connection sending every %.1fs stays open for %ds: %s" % (seconds / 2, seconds * 2, ok))
    # The quiet one was closed about `seconds` after its search; its notice and EOF are waiting.
    print("a silent connection: %s" % refusal(quiet))
    busy.close()


mode, arg = sys.argv[1], sys.argv[2]
if mode == "total":
    limit_test(int(arg), None)
elif mode == "per_ip":
    limit_test(int(arg), "127.0.0.2")
elif mode == "idle":
    idle_test(float(arg))
