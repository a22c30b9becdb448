"""python-ldap against the access list of acl.rs: what a user, a service account and an anonymous client
may read, compare and write. Prints one line per step; the Rust test checks them on both servers.
"""
import ldap

from common import SUFFIX, connect, error_name, user_dn


def attrs_of(conn, dn, wanted=None):
    res = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", wanted)
    return sorted(k.lower() for k in res[0][1]) if res else []


def attempt(what, fn):
    try:
        result = fn()
        print(what, "ok", result if result is not None else "")
    except ldap.LDAPError as e:
        print(what, error_name(e))


alice = user_dn("alice")
bob = connect(user_dn("bob"), "bob-pw")
attempt("bob reads alice", lambda: ",".join(attrs_of(bob, alice, ["*"])))
attempt("bob reads alice employeeNumber", lambda: ",".join(attrs_of(bob, alice, ["employeeNumber"])))
attempt("bob filters on userPassword",
        lambda: len(bob.search_s(alice, ldap.SCOPE_BASE, "(userPassword=*)", ["1.1"])))
attempt("bob compares alice userPassword", lambda: bob.compare_s(alice, "userPassword", "alice-pw"))
attempt("bob modifies alice",
        lambda: bob.modify_s(alice, [(ldap.MOD_REPLACE, "description", [b"by bob"])]) and None)
attempt("bob modifies himself",
        lambda: bob.modify_s(user_dn("bob"), [(ldap.MOD_REPLACE, "description", [b"mine"])]) and None)
me = connect(alice, "alice-pw")
attempt("alice changes her password", lambda: me.passwd_s(alice, "alice-pw", "alice-new") and None)
attempt("alice binds with it", lambda: connect(alice, "alice-new").whoami_s())
anon = connect()
attempt("anonymous reads alice", lambda: ",".join(attrs_of(anon, alice, ["cn"])))
attempt("anonymous searches the groups",
        lambda: len(anon.search_s("ou=groups," + SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"])))
