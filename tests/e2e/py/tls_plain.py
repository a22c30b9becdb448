"""SASL PLAIN after StartTLS with python-ldap: PLAIN is refused on the plain link and works once TLS is on.

Usage: tls_plain.py CA_FILE. Prints one line per step for the Rust test to check.
"""
import sys

import ldap
import ldap.sasl

from common import connect, error_name

plain = ldap.sasl.sasl({ldap.sasl.CB_AUTHNAME: "alice", ldap.sasl.CB_PASS: "alice-pw"}, "PLAIN")
conn = connect()
# libldap itself would not offer PLAIN without a security layer; make it ask, so the server decides.
conn.set_option(ldap.OPT_X_SASL_SECPROPS, "none")
try:
    conn.sasl_interactive_bind_s("", plain)
    print("plain before tls: ok", conn.whoami_s())
except ldap.LDAPError as e:
    print("plain before tls:", error_name(e))
conn = connect()
conn.set_option(ldap.OPT_X_TLS_CACERTFILE, sys.argv[1])
conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
conn.start_tls_s()
conn.sasl_interactive_bind_s("", plain)
print("plain after tls:", conn.whoami_s())
