"""StartTLS with python-ldap: upgrade, WhoAmI over TLS, then a second StartTLS that must be refused.

Usage: starttls.py CA_FILE. Prints one line per step for the Rust test to check.
"""
import sys

import ldap

from common import connect, user_dn

ca_file = sys.argv[1]
conn = connect()
conn.set_option(ldap.OPT_X_TLS_CACERTFILE, ca_file)
conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
conn.start_tls_s()
print("starttls: ok")
conn.simple_bind_s(user_dn("alice"), "alice-pw")
print("whoami:", conn.whoami_s())
try:
    conn.start_tls_s()
    print("second starttls: ok")
except ldap.LDAPError as e:
    info = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
    print("second starttls:", type(e).__name__, info.get("result"), info.get("info", ""))
# The connection still works after the refusal (or is gone, which the output shows).
try:
    print("after:", conn.whoami_s())
except ldap.LDAPError as e:
    print("after:", type(e).__name__)
