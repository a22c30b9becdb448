"""A critical password policy control sent to a server without the ppolicy overlay, and a non-critical
one: the first is an unavailable critical extension, the second is ignored."""
import ldap
from ldap.controls.ppolicy import PasswordPolicyControl

from common import URL, user_dn

for critical in (True, False):
    conn = ldap.initialize(URL)
    conn.protocol_version = 3
    try:
        msgid = conn.simple_bind(user_dn("alice"), "alice-pw",
                                 serverctrls=[PasswordPolicyControl(criticality=critical)])
        _, _, _, ctrls = conn.result3(msgid)
        print("critical=%s: success, %d controls" % (critical, len(ctrls)))
    except ldap.LDAPError as e:
        print("critical=%s: %s" % (critical, type(e).__name__))
