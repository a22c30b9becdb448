"""RFC 3909 Cancel through python-ldap: a sync search in its persist phase canceled (the search
answers canceled, the Cancel success), then Cancels that find nothing to cancel, a Cancel of a
modify (too late once it has answered, or already gone), and malformed Cancel requests."""
import time

import ldap
import ldap.extop
from ldap.syncrepl import SyncRequestControl

from common import root, SUFFIX, user_dn, error_name

conn = root()


def answer(label, msgid):
    try:
        kind = conn.result4(msgid, all=1, timeout=10)[0]
        print("%s: success (%s)" % (label, {ldap.RES_EXTENDED: "extended", ldap.RES_SEARCH_RESULT: "search done", ldap.RES_MODIFY: "modify"}.get(kind, kind)))
    except ldap.LDAPError as e:
        info = e.args[0].get("info", "") if isinstance(e.args[0], dict) else ""
        print("%s: %s %r" % (label, error_name(e), info))


def persisting_search():
    """A refreshAndPersist search past its refresh: the intermediate message ends the refresh."""
    msgid = conn.search_ext(SUFFIX, ldap.SCOPE_SUBTREE, "(uid=alice)",
                            serverctrls=[SyncRequestControl(mode="refreshAndPersist")])
    for _ in range(50):
        kind, _data, _mid, _ctrls = conn.result3(msgid, all=0, timeout=10)[:4]
        if kind == ldap.RES_INTERMEDIATE:
            return msgid
    raise SystemExit("no end of the refresh phase")


search = persisting_search()
time.sleep(0.2)
cancel = conn.cancel(search)
answer("the persisting search", search)
answer("its cancel", cancel)
answer("cancel of it again", conn.cancel(search))
answer("cancel of an unknown ID", conn.cancel(9999))
answer("cancel of ID 0", conn.cancel(0))
nxt = conn.cancel(0)
try:
    conn.result4(nxt, all=1, timeout=10)
except ldap.LDAPError:
    pass
answer("cancel of itself", conn.cancel(nxt + 1))

search = persisting_search()
conn.abandon(search)
answer("cancel of an abandoned search", conn.cancel(search))

done = conn.search_ext(user_dn("alice"), ldap.SCOPE_BASE)
answer("a finished search", done)
answer("cancel of the finished search", conn.cancel(done))

modify = conn.modify_ext(user_dn("alice"), [(ldap.MOD_REPLACE, "description", [b"x"])])
cancel = conn.cancel(modify)
answer("the modify", modify)
try:
    conn.result4(cancel, all=1, timeout=10)
    print("its cancel: success")
except (ldap.TOO_LATE, ldap.NO_SUCH_OPERATION):
    # tooLate while it was running, noSuchOperation once it had answered: a race on both servers.
    print("its cancel: too late or no such operation")

for label, value in (("no value", None), ("an empty sequence", b"\x30\x00"),
                     ("not BER", b"xx"), ("bytes after the sequence", b"\x30\x03\x02\x01\x7f\x00")):
    answer("cancel with %s" % label, conn.extop(ldap.extop.ExtendedRequest("1.3.6.1.1.8", value)))
