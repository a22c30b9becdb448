"""Paged results (RFC 2696) driven the way applications do: follow the server's cookie to the end."""
import ldap
from ldap.controls import SimplePagedResultsControl

from common import SUFFIX, connect

PAGE = 3
conn = connect()
ctrl = SimplePagedResultsControl(criticality=True, size=PAGE, cookie=b"")
dns = []
pages = 0
while True:
    msgid = conn.search_ext("ou=people," + SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"],
                            serverctrls=[ctrl])
    _, data, _, sctrls = conn.result3(msgid)
    pages += 1
    batch = [dn for dn, _ in data if dn is not None]
    assert len(batch) <= PAGE, "page of %d > %d" % (len(batch), PAGE)
    dns.extend(batch)
    resp = [c for c in sctrls if c.controlType == SimplePagedResultsControl.controlType]
    assert resp, "no paged-results control in the response"
    if not resp[0].cookie:
        break
    ctrl.cookie = resp[0].cookie
    assert pages < 100, "cookie never ran out"

plain = conn.search_s("ou=people," + SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"])
assert sorted(dns) == sorted(dn for dn, _ in plain), "paged and plain searches differ"
assert len(set(dns)) == len(dns), "an entry came twice"
print("pages: %d" % pages)
print("entries: %d" % len(dns))
for dn in sorted(dns, key=str.lower):
    print(dn)
