"""The assertion control (RFC 4528) on every operation it applies to, and the pre-read and post-read
controls (RFC 4527) with their attribute selections and access control."""
import ldap
from ldap.controls import LDAPControl
from ldap.controls.libldap import AssertionControl
from ldap.controls.readentry import PostReadControl, PreReadControl

from common import SUFFIX, connect, error_name, root, user_dn


def show(title, f):
    try:
        r = f()
        if isinstance(r, tuple) and len(r) == 4 and isinstance(r[0], int):
            r = "success"  # python-ldap's (type, data, msgid, controls) of an update
        print("%s: %s" % (title, r))
    except ldap.LDAPError as e:
        print("%s: %s" % (title, error_name(e)))


def assert_ctl(f, critical=True):
    return [AssertionControl(critical, f)]


VOLATILE = {"createTimestamp", "modifyTimestamp", "entryCSN", "entryUUID"}


def read_controls(ctrls):
    """Response controls as (type, dn, sorted attributes with sorted values); volatile values masked."""
    out = []
    for c in ctrls:
        entry = sorted((k, ["*"] if k in VOLATILE else sorted(v)) for k, v in c.entry.items())
        out.append((c.controlType, c.dn, entry))
    return sorted(out)


admin = root()
anon = connect()
alice = user_dn("alice")
T = "cn=target," + SUFFIX

# Searches: the assertion is tested on the base object.
for f in ["(uid=alice)", "(uid=bob)", "(fooBar=1)", "(!(uid=bob))", "(entryDN=%s)" % alice,
          "(hasSubordinates=FALSE)"]:
    show("search base %s" % f, lambda: len(anon.search_ext_s(
        alice, ldap.SCOPE_BASE, serverctrls=assert_ctl(f))))
show("one-level search, assertion on the base", lambda: len(anon.search_ext_s(
    "ou=people," + SUFFIX, ldap.SCOPE_ONELEVEL, "(uid=alice)", serverctrls=assert_ctl("(ou=people)"))))
show("subtree search, failing assertion", lambda: len(anon.search_ext_s(
    "ou=people," + SUFFIX, ldap.SCOPE_SUBTREE, "(uid=alice)", serverctrls=assert_ctl("(ou=groups)"))))
show("non-critical failing assertion", lambda: len(anon.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=assert_ctl("(uid=bob)", False))))
show("missing base with assertion", lambda: anon.search_ext_s(
    "uid=nobody,ou=people," + SUFFIX, ldap.SCOPE_BASE, serverctrls=assert_ctl("(uid=bob)")))
show("root DSE with failing assertion", lambda: anon.search_ext_s(
    "", ldap.SCOPE_BASE, serverctrls=assert_ctl("(uid=bob)")))
show("root DSE with assertion", lambda: len(anon.search_ext_s(
    "", ldap.SCOPE_BASE, serverctrls=assert_ctl("(objectClass=*)"))))
show("userPassword is not visible to the assertion", lambda: len(anon.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=assert_ctl("(userPassword=*)"))))
show("malformed assertion value", lambda: anon.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=[LDAPControl("1.3.6.1.1.12", True, b"\x04\x00")]))
show("absent assertion value", lambda: anon.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=[LDAPControl("1.3.6.1.1.12", True, None)]))
show("assertion given twice", lambda: anon.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=assert_ctl("(uid=alice)") + assert_ctl("(uid=alice)")))
show("compare, failing assertion", lambda: anon.compare_ext_s(
    alice, "uid", b"alice", serverctrls=assert_ctl("(uid=bob)")))
show("compare, holding assertion", lambda: anon.compare_ext_s(
    alice, "uid", b"alice", serverctrls=assert_ctl("(uid=alice)")))

# Updates.
role = [("objectClass", [b"organizationalRole"]), ("cn", [b"target"]), ("description", [b"one"])]
show("add, assertion on the new entry fails", lambda: admin.add_ext_s(
    T, role, serverctrls=assert_ctl("(description=two)")))
show("add, assertion on the new entry holds", lambda: admin.add_ext_s(
    T, role, serverctrls=assert_ctl("(description=one)")))
mod = [(ldap.MOD_REPLACE, "description", [b"two"])]
show("modify, failing assertion", lambda: admin.modify_ext_s(
    T, mod, serverctrls=assert_ctl("(description=zzz)")))
show("modify, holding assertion", lambda: admin.modify_ext_s(
    T, mod, serverctrls=assert_ctl("(description=one)")))
show("modify of a missing entry with assertion", lambda: admin.modify_ext_s(
    "cn=missing," + SUFFIX, mod, serverctrls=assert_ctl("(description=one)")))
show("rename, failing assertion", lambda: admin.rename_s(
    T, "cn=renamed", serverctrls=assert_ctl("(description=one)")))
show("delete, failing assertion", lambda: admin.delete_ext_s(
    T, serverctrls=assert_ctl("(cn=other)")))
show("entry after refused updates", lambda: admin.search_s(T, ldap.SCOPE_BASE, attrlist=["cn", "description"]))


def with_controls(call):
    def run():
        msgid = call()
        return read_controls(admin.result3(msgid)[3])
    return run


show("modify with pre-read and post-read", with_controls(lambda: admin.modify_ext(
    T, [(ldap.MOD_REPLACE, "description", [b"three"])],
    serverctrls=[PreReadControl(True, ["description"]),
                 PostReadControl(True, ["description", "entryDN", "hasSubordinates"])])))
show("modify, reads of all user and all operational attributes", with_controls(lambda: admin.modify_ext(
    T, [(ldap.MOD_ADD, "description", [b"four"])],
    serverctrls=[PreReadControl(True), PostReadControl(True, ["+", "cn"])])))
show("rename with pre-read and post-read", with_controls(lambda: admin.rename(
    T, "cn=renamed", None, 1, serverctrls=[PreReadControl(True, ["cn"]), PostReadControl(True, ["cn", "entryDN"])])))
show("add with post-read", with_controls(lambda: admin.add_ext(
    "cn=second," + SUFFIX, [("objectClass", [b"organizationalRole"]), ("cn", [b"second"])],
    serverctrls=[PostReadControl(True, ["cn", "objectClass", "entryDN"])])))
show("delete with pre-read", with_controls(lambda: admin.delete_ext(
    "cn=second," + SUFFIX, serverctrls=[PreReadControl(True, ["*"])])))
show("critical pre-read on add", lambda: admin.add_ext_s(
    "cn=third," + SUFFIX, [("objectClass", [b"organizationalRole"]), ("cn", [b"third"])],
    serverctrls=[PreReadControl(True, ["cn"])]))
show("non-critical pre-read on add", with_controls(lambda: admin.add_ext(
    "cn=third," + SUFFIX, [("objectClass", [b"organizationalRole"]), ("cn", [b"third"])],
    serverctrls=[PreReadControl(False, ["cn"])])))
show("critical post-read on delete", lambda: admin.delete_ext_s(
    "cn=third," + SUFFIX, serverctrls=[PostReadControl(True, ["cn"])]))
show("critical pre-read on search", lambda: admin.search_ext_s(
    alice, ldap.SCOPE_BASE, serverctrls=[PreReadControl(True, ["cn"])]))
show("malformed pre-read value", lambda: admin.delete_ext_s(
    "cn=third," + SUFFIX, serverctrls=[LDAPControl("1.3.6.1.1.13.1", True, b"\x04\x00")]))
show("pre-read of a missing entry", lambda: admin.delete_ext_s(
    "cn=missing," + SUFFIX, serverctrls=[PreReadControl(True, ["cn"])]))
show("failed modify sends no read controls", lambda: admin.modify_ext_s(
    "cn=renamed," + SUFFIX, [(ldap.MOD_ADD, "fooBar", [b"x"])],
    serverctrls=[PreReadControl(True, ["cn"]), PostReadControl(True, ["cn"])]))

# Access control applies to what is read back: a user changing their own password sees it, the
# read of someone else's entry by a plain user is refused before any control is built. The new value
# is a hash (of "new-pw"): canopy would store a cleartext value hashed with a random salt.
bob = connect(user_dn("bob"), "bob-pw")
show("user's own password change with post-read", lambda: read_controls(bob.result3(bob.modify_ext(
    user_dn("bob"), [(ldap.MOD_REPLACE, "userPassword", [b"{SSHA}lpoO1vSHjoFNiQ8V585iPl3o7adGV1FNtwarkw=="])],
    serverctrls=[PreReadControl(True, ["userPassword", "uid"]),
                 PostReadControl(True, ["userPassword", "uid"])]))[3]))
show("pre-read by the root DN shows the password", with_controls(lambda: admin.modify_ext(
    user_dn("bob"), [(ldap.MOD_REPLACE, "description", [b"x"])],
    serverctrls=[PreReadControl(True, ["userPassword"])])))
show("refused modify by another user", lambda: bob.modify_ext_s(
    alice, [(ldap.MOD_REPLACE, "description", [b"x"])],
    serverctrls=[PreReadControl(True, ["cn"])]))

# Which check comes first: slapd tests the assertion of a modify or add before access control, and
# that of a delete, rename or compare after it; schema and referral checks come before both.
mod_x = [(ldap.MOD_REPLACE, "description", [b"x"])]
REMOTE = "ou=remote,ou=refs," + SUFFIX
cases = [
    ("user modifies another entry, failing assertion",
     lambda: bob.modify_ext_s(alice, mod_x, serverctrls=assert_ctl("(uid=bob)"))),
    ("user modifies another entry, holding assertion",
     lambda: bob.modify_ext_s(alice, mod_x, serverctrls=assert_ctl("(uid=alice)"))),
    ("user deletes another entry, failing assertion",
     lambda: bob.delete_ext_s(alice, serverctrls=assert_ctl("(uid=bob)"))),
    ("user renames another entry, failing assertion",
     lambda: bob.rename_s(alice, "uid=alice2", serverctrls=assert_ctl("(uid=bob)"))),
    ("user adds, failing assertion", lambda: bob.add_ext_s(
        "cn=bobs," + SUFFIX, [("objectClass", [b"organizationalRole"]), ("cn", [b"bobs"])],
        serverctrls=assert_ctl("(uid=bob)"))),
    ("user deletes a missing entry, failing assertion",
     lambda: bob.delete_ext_s("cn=missing," + SUFFIX, serverctrls=assert_ctl("(uid=bob)"))),
    ("user deletes another entry with pre-read",
     lambda: bob.delete_ext_s(alice, serverctrls=[PreReadControl(True, ["cn"])])),
    ("anonymous modify, failing assertion",
     lambda: anon.modify_ext_s(alice, mod_x, serverctrls=assert_ctl("(uid=bob)"))),
    ("anonymous compare of userPassword, failing assertion",
     lambda: anon.compare_ext_s(alice, "userPassword", b"x", serverctrls=assert_ctl("(uid=bob)"))),
    ("compare of an undefined type, failing assertion",
     lambda: anon.compare_ext_s(alice, "fooBar", b"x", serverctrls=assert_ctl("(uid=bob)"))),
    ("modify at a referral, failing assertion",
     lambda: admin.modify_ext_s(REMOTE, mod_x, serverctrls=assert_ctl("(uid=bob)"))),
    ("delete of a non-leaf, failing assertion",
     lambda: admin.delete_ext_s("ou=people," + SUFFIX, serverctrls=assert_ctl("(uid=bob)"))),
    ("delete of a non-leaf, holding assertion",
     lambda: admin.delete_ext_s("ou=people," + SUFFIX, serverctrls=assert_ctl("(ou=people)"))),
    ("modify breaking the schema, failing assertion",
     lambda: admin.modify_ext_s(alice, [(ldap.MOD_DELETE, "sn", None)], serverctrls=assert_ctl("(uid=bob)"))),
    ("modify with an undefined type, failing assertion",
     lambda: admin.modify_ext_s(alice, [(ldap.MOD_ADD, "fooBar", [b"x"])], serverctrls=assert_ctl("(uid=bob)"))),
    ("add under a missing parent, failing assertion", lambda: admin.add_ext_s(
        "cn=x,ou=nowhere," + SUFFIX, [("objectClass", [b"organizationalRole"]), ("cn", [b"x"])],
        serverctrls=assert_ctl("(uid=bob)"))),
    ("rename onto an existing entry, failing assertion",
     lambda: admin.rename_s(alice, "uid=bob", serverctrls=assert_ctl("(uid=bob)"))),
]
for title, call in cases:
    show(title, call)
