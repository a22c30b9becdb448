"""Crash-test writer: adds entries one by one and prints each DN once the server acknowledged it.

Usage: stream_adds.py FIRST_INDEX. Runs until the server goes away (the test kills it), then exits 0.
"""
import sys

import ldap

from common import SUFFIX, root

first = int(sys.argv[1])
conn = root()
i = first
try:
    while i < first + 1000000:
        dn = "cn=w%d,ou=crash,%s" % (i, SUFFIX)
        conn.add_s(dn, [("objectClass", [b"organizationalRole"]), ("cn", [b"w%d" % i]),
                        ("description", [b"acknowledged write %d" % i])])
        # Printed only after add_s returned success: this line is the acknowledgement.
        print(dn, flush=True)
        i += 1
except ldap.LDAPError as e:
    print("stopped: %s" % type(e).__name__, file=sys.stderr)
