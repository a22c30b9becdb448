"""A refreshAndPersist sync search (RFC 4533) whose consumer reads nothing while one entry is modified
ROUNDS times (the argument) in quick succession, renamed, and modified once more, then reads every update: each one
must show its own change's state (the k-th update the k-th value, the updates before the rename the
old DN), as slapd's syncprov sends the entry each change stored, not the entry as it is when the
provider gets round to sending.

The entry holds a 64 KiB value and the consumer's receive buffer is 4 KiB: with more rounds than the
provider's response queue and socket buffers hold (canopy queues 64 responses per connection), the
provider has to wait before it sends the later updates, after every change was made. Prints one line per update:
`<first RDN> <sn> <sync state>`.
"""
import sys
import time

import ldap

from common import ROOT_DN, ROOT_PW, SUFFIX, root
from rawldap import SEARCH_ENTRY, abandon, bind, children, connect, message, octets, parse_tlv, \
    present, tlv, unbind

INTERMEDIATE = 0x79
SYNC_REQUEST = "1.3.6.1.4.1.4203.1.9.1.1"
STATES = {0: "present", 1: "add", 2: "modify", 3: "delete"}
ROUNDS = int(sys.argv[1])


def next_raw(conn, deadline):
    """The next message's raw bytes, waiting until `deadline` at most."""
    return conn.recv_raw(max(0.0, deadline - time.monotonic()))


def update(raw):
    """A SearchResultEntry with its Sync State control: (DN, sn values, state name)."""
    _, s, e = parse_tlv(raw, 0)
    parts = children(raw, s, e)
    body = parts[1][1]
    dn, attrs = children(body, 0, len(body))
    sn = []
    for _, attr in children(attrs[1], 0, len(attrs[1])):
        name, values = children(attr, 0, len(attr))
        if name[1].decode().lower() == "sn":
            sn = [v.decode() for _, v in children(values[1], 0, len(values[1]))]
    state = "none"
    for tag, controls in parts[2:]:
        if tag != 0xA0:
            continue
        for _, control in children(controls, 0, len(controls)):
            fields = children(control, 0, len(control))
            if fields[0][1].decode() == "1.3.6.1.4.1.4203.1.9.1.2":
                value = fields[-1][1]
                inner = children(value, 0, len(value))[0][1]
                first = children(inner, 0, len(inner))[0][1]
                state = STATES.get(int.from_bytes(first, "big"), "?")
    return dn[1].decode(), sn, state


def main():
    writer = root()
    mover = "cn=mover,ou=people," + SUFFIX
    writer.add_s(mover, [("objectClass", [b"person"]), ("cn", [b"mover"]), ("sn", [b"state 00"]),
                         ("description", [b"x" * 65536])])
    conn = connect(rcvbuf=4096)
    conn.send(bind(1, ROOT_DN, ROOT_PW))
    assert conn.recv().code == 0
    body = (octets("ou=people," + SUFFIX) + tlv(0x0A, b"\x02") + tlv(0x0A, b"\x00")
            + tlv(0x02, b"\x00") + tlv(0x02, b"\x00") + tlv(0x01, b"\x00") + present("objectClass")
            + tlv(0x30, octets("sn") + octets("description")))
    control = tlv(0x30, octets(SYNC_REQUEST) + tlv(0x01, b"\xff")
                  + octets(tlv(0x30, tlv(0x0A, b"\x03"))))
    conn.send(message(2, tlv(0x63, body) + tlv(0xA0, control)))
    deadline = time.monotonic() + 30
    while True:
        raw = next_raw(conn, deadline)
        _, s, e = parse_tlv(raw, 0)
        if children(raw, s, e)[1][0] == INTERMEDIATE:
            break
    print("refreshed", flush=True)
    # Nothing is read from here until every change is acknowledged.
    for k in range(1, ROUNDS + 1):
        writer.modify_s(mover, [(ldap.MOD_REPLACE, "sn", [b"state %02d" % k])])
    writer.rename_s(mover, "cn=moved", delold=1)
    moved = "cn=moved,ou=people," + SUFFIX
    writer.modify_s(moved, [(ldap.MOD_REPLACE, "sn", [b"state %02d" % (ROUNDS + 1)])])
    updates = 0
    deadline = time.monotonic() + 30
    while updates < ROUNDS + 2:
        raw = next_raw(conn, deadline)
        _, s, e = parse_tlv(raw, 0)
        op = children(raw, s, e)[1][0]
        if op == INTERMEDIATE:
            continue
        if op != SEARCH_ENTRY:
            print("unexpected operation 0x%02x" % op)
            sys.exit(1)
        dn, sn, state = update(raw)
        print("%s %s %s" % (dn.split(",")[0].lower(), "/".join(sn) or "-", state), flush=True)
        updates += 1
    conn.send(abandon(3, 2) + unbind(4))
    writer.delete_s(moved)
    writer.unbind_s()


if __name__ == "__main__":
    main()
