"""Server-side sorting with virtual list views and paged results, as slapd's sssvlv overlay answers
them: each answer is checked here (the same script passes against canopy and slapd) and printed.
The server has `sssvlv-maxperconn 2`; the people's uidNumbers sort them alice, bob, carol, ..."""
import ldap
from ldap.controls import RequestControl, SimplePagedResultsControl
from ldap.controls.sss import SSSRequestControl, SSSResponseControl
from ldap.controls.vlv import VLVRequestControl, VLVResponseControl

from common import SUFFIX, connect

BASE = "ou=people," + SUFFIX
FILTER = "(&(objectClass=posixAccount)(uidNumber<=1013))"
ORDER = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "niaj", "olivia"]
SORT = SSSRequestControl(criticality=True, ordering_rules=["uidNumber"])
REVERSE = SSSRequestControl(criticality=True, ordering_rules=["-uidNumber"])


def uid(dn):
    return dn.split(",")[0].split("=")[1]


def search(conn, controls):
    """(uids, response controls by type) or the LDAPError's (result, info, controls)."""
    try:
        msgid = conn.search_ext(BASE, ldap.SCOPE_SUBTREE, FILTER, ["1.1"], serverctrls=controls)
        _, data, _, ctrls = conn.result3(msgid)
    except ldap.LDAPError as e:
        err = e.args[0]
        return None, (err.get("result"), err.get("info", ""), err.get("ctrls") or [])
    return [uid(dn) for dn, _ in data if dn], ctrls


def vlv(conn, sort, before, after, offset=None, count=0, value=None, context=None):
    if value is None:
        ctrl = VLVRequestControl(criticality=True, before_count=before, after_count=after,
                                 offset=offset, content_count=count, context_id=context)
    else:
        ctrl = VLVRequestControl(criticality=True, before_count=before, after_count=after,
                                 greater_than_or_equal=value, context_id=context)
    uids, ctrls = search(conn, [sort, ctrl])
    if uids is None:
        return None, ctrls
    resp = [c for c in ctrls if isinstance(c, VLVResponseControl)]
    sss = [c for c in ctrls if isinstance(c, SSSResponseControl)]
    assert resp and sss and sss[0].sortResult == 0, ctrls
    return uids, (resp[0].target_position, resp[0].content_count, resp[0].result)


def window(label, got, uids, position):
    print("%s: %s at %d of %d" % (label, " ".join(got[0]), got[1][0], got[1][1]))
    assert got[0] == uids, (label, got)
    assert got[1] == (position, len(ORDER), 0), (label, got)


# Each window on a new connection: without a context, every VLV request keeps a list open.
window("offset 3, 1 before, 2 after", vlv(connect(), SORT, 1, 2, offset=3), ORDER[1:5], 3)
window("offset 1 of 13", vlv(connect(), SORT, 0, 1, offset=1, count=13), ORDER[0:2], 1)
window("offset 0, count 0: the last", vlv(connect(), SORT, 1, 1, offset=0), ORDER[11:13], 13)
window("offset 13 of 26: the middle", vlv(connect(), SORT, 0, 0, offset=13, count=26), ORDER[5:6], 6)
window("offset 26 of 26: the last", vlv(connect(), SORT, 2, 0, offset=26, count=26), ORDER[10:13], 13)
window("at least 1005", vlv(connect(), SORT, 1, 1, value="1005"), ORDER[3:6], 5)
window("at least 1005, reversed", vlv(connect(), REVERSE, 0, 1, value="1005"), ["erin", "dave"], 9)
window("past the end", vlv(connect(), SORT, 2, 2, value="5000"), ORDER[11:13], 14)
window("reverse, offset 2", vlv(connect(), REVERSE, 1, 1, offset=2), ["olivia", "niaj", "mallory"], 2)

# An offset beyond the list: vlvError with offsetRangeError.
uids, (code, info, ctrls) = vlv(connect(), SORT, 0, 0, offset=20)
vlv_resp = [c for c in ctrls if c[0] == VLVResponseControl.controlType]
assert uids is None and code == 76 and vlv_resp, (code, ctrls)
decoded = VLVResponseControl()
decoded.decodeControlValue(vlv_resp[0][2])
print("offset 20: result %d, VLV result %d, content count %d" % (code, decoded.result,
                                                                  decoded.content_count))
assert (decoded.target_position, decoded.content_count, decoded.result) == (0, 13, 77)

# VLV without sort: vlvError, and a VLV response saying so.
conn = connect()
uids, (code, info, ctrls) = search(conn, [VLVRequestControl(
    criticality=True, before_count=0, after_count=1, offset=1, content_count=0)])
print("VLV without sort: %d %s" % (code, info))
assert uids is None and code == 76 and info == "Sort control is required with VLV", (code, info)
assert [c[0] for c in ctrls] == [VLVResponseControl.controlType], ctrls

# VLV with paged results: unwillingToPerform.
uids, (code, info, _) = search(conn, [SORT, VLVRequestControl(
    criticality=True, before_count=0, after_count=1, offset=1, content_count=0),
    SimplePagedResultsControl(True, size=2, cookie=b"")])
print("VLV with paging: %d %s" % (code, info))
assert code == 53 and info == "VLV incompatible with PagedResults", (code, info)

# A connection keeps at most two lists open (sssvlv-maxperconn 2); a plain sort needs a free place
# too while it runs.
conn = connect()
for i in range(2):
    uids, _ = vlv(conn, SORT, 0, 0, offset=1)
    assert uids == ["alice"], uids
uids, (code, info, _) = vlv(conn, SORT, 0, 0, offset=1)
print("third VLV list on a connection: %d %s" % (code, info))
assert uids is None and code == 51 and info == "Other sort requests already in progress"
uids, (code, info, _) = search(conn, [SORT])
print("sort with two VLV lists open: %d %s" % (code, info))
assert uids is None and code == 51
# Another connection is not affected.
uids, _ = search(connect(), [SORT])
assert uids == ORDER, uids

# Paged and sorted: pages follow the sorted order, the size tells what is left, the last cookie is
# empty; each page carries the sort result.
conn = connect()
paged = SimplePagedResultsControl(True, size=5, cookie=b"")
pages = []
for _ in range(10):
    uids, ctrls = search(conn, [SORT, paged])
    assert uids is not None, ctrls
    resp = [c for c in ctrls if c.controlType == SimplePagedResultsControl.controlType][0]
    assert [c for c in ctrls if isinstance(c, SSSResponseControl)], ctrls
    pages.append((uids, resp.size))
    if not resp.cookie:
        break
    paged.cookie = resp.cookie
for uids, left in pages:
    print("page: %s (%d left)" % (" ".join(uids), left))
assert [u for p, _ in pages for u in p] == ORDER, pages
assert [left for _, left in pages] == [8, 3, 0], pages
# An abandoned paged sort (size 0 with its cookie) frees its place: two more lists fit.
paged = SimplePagedResultsControl(True, size=5, cookie=b"")
uids, ctrls = search(conn, [SORT, paged])
paged.cookie = [c for c in ctrls if c.controlType == paged.controlType][0].cookie
paged.size = 0
uids, ctrls = search(conn, [SORT, paged])
assert uids == [] and ctrls == [], ctrls
for i in range(2):
    uids, _ = vlv(conn, SORT, 0, 0, offset=2)
    assert uids == ["bob"], uids
print("abandoned paged sort freed its place")

# Malformed controls: protocolError with slapd's texts.
conn = connect()
for value, text in [(b"\x30\x00", "serverSort control: decoding error"),
                    (None, "sorted results control value is absent")]:
    uids, (code, info, _) = search(conn, [RequestControl(SSSRequestControl.controlType, True, value)])
    print("sort control %r: %d %s" % (value, code, info))
    assert code == 2 and info == text, (code, info)

# A context sent back reuses its list: no new search (an entry added since is not in it) and no new
# place on the connection. python-ldap's VLVResponseControl turns the context into text, so the
# response is read raw from here on.
from ldap.controls import KNOWN_RESPONSE_CONTROLS, ResponseControl  # noqa: E402

from common import root  # noqa: E402


class RawVLV(ResponseControl):
    controlType = VLVResponseControl.controlType

    def decodeControlValue(self, value):
        self.raw = value


KNOWN_RESPONSE_CONTROLS[RawVLV.controlType] = RawVLV


def vlv_raw(conn, context):
    """Offset 1, none before, two after, with `context` (bytes) when given: (uids, context)."""
    value = b"\x02\x01\x00\x02\x01\x02\xa0\x06\x02\x01\x01\x02\x01\x00"
    if context:
        value += b"\x04" + bytes([len(context)]) + context
    value = b"\x30" + bytes([len(value)]) + value
    uids, ctrls = search(conn, [SORT, RequestControl(VLVRequestControl.controlType, True, value)])
    if uids is None:
        return None, ctrls
    raw = [c.raw for c in ctrls if isinstance(c, RawVLV)][0]
    # targetPosition, contentCount, result, then the context (the rest of the sequence).
    reader = raw[2:]
    for _ in range(3):
        reader = reader[2 + reader[1]:]
    assert reader[:1] == b"\x04", raw
    return uids, reader[2:2 + reader[1]]


conn = connect()
uids, context = vlv_raw(conn, None)
assert uids == ORDER[0:3], (uids, context)
admin = root()
newcomer = "uid=aaron,ou=people," + SUFFIX
admin.add_s(newcomer, [("objectClass", [b"inetOrgPerson", b"posixAccount"]), ("uid", [b"aaron"]),
                       ("cn", [b"Aaron"]), ("sn", [b"Aaron"]), ("uidNumber", [b"1000"]),
                       ("gidNumber", [b"1000"]), ("homeDirectory", [b"/home/aaron"])])
try:
    for i in range(3):
        uids, again = vlv_raw(conn, context)
        assert uids == ORDER[0:3] and again == context, (uids, again, context)
    print("context reused three times: %s" % " ".join(uids))
    uids, fresh = vlv_raw(conn, None)
    assert uids == ["aaron"] + ORDER[0:2] and fresh != context, uids
    print("a new list: %s" % " ".join(uids))
    uids, (code, info, _) = vlv_raw(conn, b"unknown!")
    print("an unknown context on a full connection: %d %s" % (code, info))
    assert uids is None and code == 51, (code, info)
finally:
    admin.delete_s(newcomer)
