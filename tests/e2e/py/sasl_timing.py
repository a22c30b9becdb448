"""Bind timing for the SASL tests: median seconds of failed simple binds, or the time of each failure.

Usage: sasl_timing.py medians N DN_A PW_A DN_B PW_B   -> "A_MEDIAN B_MEDIAN" (interleaved, one connection)
       sasl_timing.py series N DN PW                  -> one duration per failed bind, one line each
       sasl_timing.py scram USER PW MECH              -> the whoami of a SASL SCRAM bind
"""

import os
import statistics
import sys
import time

import ldap
import ldap.sasl

URL = os.environ["LDAP_URL"]


def failed_bind(conn, dn, pw):
    start = time.monotonic()
    try:
        conn.simple_bind_s(dn, pw)
        raise SystemExit(f"bind as {dn} unexpectedly succeeded")
    except ldap.INVALID_CREDENTIALS:
        pass
    return time.monotonic() - start


def main():
    mode = sys.argv[1]
    conn = ldap.initialize(URL)
    conn.protocol_version = 3
    if mode == "medians":
        n, dn_a, pw_a, dn_b, pw_b = int(sys.argv[2]), *sys.argv[3:7]
        a, b = [], []
        for _ in range(n):
            a.append(failed_bind(conn, dn_a, pw_a))
            b.append(failed_bind(conn, dn_b, pw_b))
        print(f"{statistics.median(a):.6f} {statistics.median(b):.6f}")
    elif mode == "series":
        n, dn, pw = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        for _ in range(n):
            print(f"{failed_bind(conn, dn, pw):.6f}")
    elif mode == "scram":
        user, pw, mech = sys.argv[2:5]
        auth = ldap.sasl.sasl({ldap.sasl.CB_AUTHNAME: user, ldap.sasl.CB_PASS: pw}, mech)
        conn.sasl_interactive_bind_s("", auth)
        print(conn.whoami_s())
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
