"""Proxied authorization (RFC 4370) as only python-ldap can send it: a non-critical control, a control
without a value or given twice, the obsolete v1 OID, the control on a bind and on extended operations.
Prints one line per case: the answer's result code and text, or the identity Who am I? returns.
Run with authz-policy any and uid=alice's authzTo naming uid=bob.
"""
import ldap
from ldap.controls import RequestControl, RequestControlTuples

from common import connect, user_dn

PROXY = "2.16.840.1.113730.3.4.18"
PROXY_V1 = "2.16.840.1.113730.3.4.12"


def ctl(value, critical=True, oid=PROXY):
    return RequestControl(oid, critical, value)


def answer(name, call):
    try:
        result = call()
        if isinstance(result, str):
            print("%s: ok %s" % (name, result))
        else:
            print("%s: ok" % name)
    except ldap.LDAPError as e:
        info = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
        print("%s: %s %s" % (name, info.get("result"), info.get("info", "")))


bob = ("dn:" + user_dn("bob")).encode()
erin = ("dn:" + user_dn("erin")).encode()
alice = connect(user_dn("alice"), "alice-pw")


def whoami(*controls):
    return lambda: alice.whoami_s(serverctrls=RequestControlTuples(list(controls)))


answer("non-critical", whoami(ctl(bob, False)))
answer("non-critical denied", whoami(ctl(erin, False)))
answer("value absent", whoami(ctl(None)))
answer("twice", whoami(ctl(bob), ctl(bob)))
answer("v1 control", whoami(ctl(bob, True, PROXY_V1)))
answer("v1 non-critical", whoami(ctl(bob, False, PROXY_V1)))
answer("empty is anonymous", whoami(ctl(b"")))
answer("dn: is anonymous", whoami(ctl(b"dn:")))
answer("bare DN", whoami(ctl(user_dn("bob").encode())))
answer("bad DN", whoami(ctl(b"dn:uid=bob,,x")))
answer("case and spaces", whoami(ctl(("DN: " + user_dn("bob").upper()).encode())))
answer(
    "bind critical",
    lambda: connect().simple_bind_s(user_dn("alice"), "alice-pw", serverctrls=[ctl(bob)]),
)
answer(
    "bind non-critical",
    lambda: connect().simple_bind_s(user_dn("alice"), "alice-pw", serverctrls=[ctl(bob, False)]),
)
answer(
    "unknown extended",
    lambda: alice.extop_s(ldap.extop.ExtendedRequest("1.2.3.4", None), serverctrls=[ctl(bob)]),
)
answer(
    "StartTLS",
    lambda: alice.extop_s(
        ldap.extop.ExtendedRequest("1.3.6.1.4.1.1466.20037", None), serverctrls=[ctl(bob)]
    ),
)
answer(
    "compare denied",
    lambda: alice.compare_ext_s(user_dn("bob"), "uid", b"bob", serverctrls=[ctl(erin)]),
)
answer(
    "compare as bob",
    lambda: alice.compare_ext_s(user_dn("bob"), "uid", b"bob", serverctrls=[ctl(bob)]),
)
anonymous = connect()
answer(
    "anonymous client",
    lambda: anonymous.whoami_s(serverctrls=RequestControlTuples([ctl(bob)])),
)
answer(
    "anonymous client, anonymous target",
    lambda: anonymous.whoami_s(serverctrls=RequestControlTuples([ctl(b"")])),
)
