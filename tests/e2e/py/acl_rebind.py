"""One connection, searching under one identity after another (bind, search, rebind, search): what
each search returns must follow the identity of the moment, whatever an earlier search decided.
Prints one line per search; the Rust test (acl.rs) checks them on both servers.
"""
import ldap

from common import SUFFIX, connect, error_name, user_dn

PEOPLE = "ou=people," + SUFFIX


def mails(conn):
    try:
        res = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=inetOrgPerson)", ["mail"])
    except ldap.LDAPError as e:
        return [error_name(e)]
    found = sorted(attrs["mail"][0].decode() for _, attrs in res if "mail" in attrs)
    # Alice may read every entry; print how many then, and the list when it is short.
    return found if len(found) < 3 else ["%d entries" % len(found)]


def by_mail(conn, mail):
    try:
        res = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(mail=%s)" % mail, ["1.1"])
    except ldap.LDAPError as e:
        return [error_name(e)]
    return [dn for dn, _ in res]


conn = connect(user_dn("alice"), "alice-pw")
for step in range(2):
    print("alice", step, ",".join(mails(conn)), ",".join(by_mail(conn, "alice@example.com")))
conn.simple_bind_s(user_dn("bob"), "bob-pw")
for step in range(2):
    print("bob", step, ",".join(mails(conn)), ",".join(by_mail(conn, "alice@example.com")))
conn.simple_bind_s("", "")
print("anonymous", ",".join(mails(conn)))
conn.simple_bind_s(user_dn("alice"), "alice-pw")
print("alice again", ",".join(mails(conn)))
