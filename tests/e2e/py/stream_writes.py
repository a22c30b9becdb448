"""Writer for the operations tests: adds entries under PARENT one by one and modifies every fourth right
after its add, printing each write once the server acknowledged it: `add DN` or `mod DN VALUE`.

Usage: stream_writes.py PARENT FIRST COUNT. Stops after COUNT adds, or when the server goes away (a
shutdown or a kill), and exits 0 either way; how it stopped goes to standard error.
"""
import sys

import ldap

from common import SUFFIX, root

parent, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conn = root()
try:
    for i in range(first, first + count):
        dn = "cn=w%d,%s,%s" % (i, parent, SUFFIX)
        conn.add_s(dn, [("objectClass", [b"organizationalRole"]), ("cn", [b"w%d" % i]),
                        ("description", [b"added %d" % i])])
        # Printed only after the call returned success: this line is the acknowledgement.
        print("add %s" % dn, flush=True)
        if i % 4 == 0:
            value = "modified %d" % i
            conn.modify_s(dn, [(ldap.MOD_REPLACE, "description", [value.encode()])])
            print("mod %s %s" % (dn, value), flush=True)
    print("finished", file=sys.stderr)
except ldap.LDAPError as e:
    print("stopped: %s" % type(e).__name__, file=sys.stderr)
