"""The password policy control (draft-behera-10) as python-ldap decodes it: an expiry warning on a
good bind, nothing on failures until the account is locked, then accountLocked; passwordTooShort on
a modify. The policy and the person are set up by the Rust test (tests/e2e/tests/e2e/ppolicy.rs)."""
import ldap
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl

from common import URL, user_dn

DN = user_dn("py")


def policy_of(ctrls):
    found = [c for c in ctrls if c.controlType == PasswordPolicyControl.controlType]
    assert len(found) == 1, "expected one password policy control, got %r" % ctrls
    return found[0]


def bind(pw):
    conn = ldap.initialize(URL)
    conn.protocol_version = 3
    try:
        msgid = conn.simple_bind(DN, pw, serverctrls=[PasswordPolicyControl()])
        _, _, _, ctrls = conn.result3(msgid)
        code = "success"
    except ldap.LDAPError as e:
        ctrls = DecodeControlTuples(e.args[0].get("ctrls", []))
        code = type(e).__name__
    c = policy_of(ctrls)
    expiring = c.timeBeforeExpiration is not None and 0 < c.timeBeforeExpiration <= 3600
    print("bind %s: %s expiring=%s grace=%s error=%s"
          % ("right" if pw == "py-pw-1" else "wrong", code, expiring, c.graceAuthNsRemaining, c.error))
    return conn


conn = bind("py-pw-1")
msgid = conn.modify_ext(DN, [(ldap.MOD_REPLACE, "userPassword", [b"abc"])],
                        serverctrls=[PasswordPolicyControl()])
try:
    conn.result3(msgid)
    print("modify: success")
except ldap.LDAPError as e:
    c = policy_of(DecodeControlTuples(e.args[0].get("ctrls", [])))
    print("modify short password: %s error=%s" % (type(e).__name__, c.error))
for _ in range(3):
    bind("wrong")
bind("py-pw-1")
