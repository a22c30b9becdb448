"""One connection bound with pwdReset: refused everything but changing its own password, then, once
the password is changed, free again (the person `rsession` is set up by the Rust test)."""
import ldap
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl

from common import SUFFIX, URL, user_dn

DN = user_dn("rsession")
conn = ldap.initialize(URL)
conn.protocol_version = 3
msgid = conn.simple_bind(DN, "rsession-pw-2", serverctrls=[PasswordPolicyControl()])
_, _, _, ctrls = conn.result3(msgid)
print("bind: error=%s" % [c.error for c in ctrls])


def search(what):
    try:
        msgid = conn.search_ext(SUFFIX, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"],
                                serverctrls=[PasswordPolicyControl()])
        conn.result3(msgid)
        print("%s: search success" % what)
    except ldap.LDAPError as e:
        errors = [c.error for c in DecodeControlTuples(e.args[0].get("ctrls", []))]
        print("%s: search %s error=%s" % (what, type(e).__name__, errors))


search("restricted")
conn.passwd_s(DN, None, "rsession-pw-3")
print("own password changed")
search("after the change")
