"""Referral objects (RFC 3296): referral results with adjusted URLs, continuation references, and
ManageDsaIT, on the entries of data/aliases_referrals.ldif."""
import ldap
from ldap.controls.simple import ManageDSAITControl

from common import SUFFIX, connect, root

REFS = "ou=refs," + SUFFIX
REMOTE = "ou=remote," + REFS
TWO = "ou=two," + REFS
MANAGE = [ManageDSAITControl(False)]
MANAGE_CRITICAL = [ManageDSAITControl(True)]


def failure(e):
    info = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
    refs = [l for l in info.get("info", "").splitlines() if "://" in l]
    return "%s (%s) matched=%r refs=%r" % (type(e).__name__, info.get("result"),
                                            info.get("matched"), sorted(r.strip() for r in refs))


def show(title, f):
    try:
        r = f()
        if isinstance(r, tuple) and len(r) == 4 and isinstance(r[0], int):
            r = "success"  # python-ldap's (type, data, msgid, controls) of an update
        elif isinstance(r, list):
            r = [(dn, sorted(attrs.items())) for dn, attrs in r]
        print("%s: %s" % (title, r))
    except ldap.LDAPError as e:
        print("%s: %s" % (title, failure(e)))


def search(conn, base, scope, filt="(objectClass=*)", ctrls=None):
    """Entries as sorted DNs and references as sorted URL lists. slapd can send an entry twice when
    aliases reach it along two paths; canopy removes such duplicates (RFC 4511 section 4.5.1.3), so
    they are compared as sets."""
    res = conn.search_ext_s(base, scope, filt, ["1.1"], serverctrls=ctrls)
    entries = sorted(set(dn for dn, _ in res if dn is not None))
    references = sorted(sorted(urls) for dn, urls in res if dn is None)
    return "entries=%r references=%r" % (entries, references)


anon = connect()
anon.set_option(ldap.OPT_REFERRALS, 0)
scopes = [("base", ldap.SCOPE_BASE), ("one", ldap.SCOPE_ONELEVEL), ("sub", ldap.SCOPE_SUBTREE),
          ("children", 3)]
bases = [REFS, REMOTE, TWO, "cn=x,ou=y," + REMOTE, "cn=z," + TWO, "cn=a b\\2C?\u00e9#," + REMOTE,
         "CN=Upper," + REMOTE]
for name, scope in scopes:
    for base in bases:
        show("search %s %s" % (name, base), lambda: search(anon, base, scope))
        show("search %s %s with ManageDsaIT" % (name, base),
             lambda: search(anon, base, scope, ctrls=MANAGE))
show("critical ManageDsaIT reads the referral object",
     lambda: anon.search_ext_s(REMOTE, ldap.SCOPE_BASE, "(objectClass=*)", ["*", "ref"],
                               serverctrls=MANAGE_CRITICAL))
show("references ignore the filter", lambda: search(anon, SUFFIX, ldap.SCOPE_SUBTREE, "(uid=alice)"))
show("one-level from the suffix", lambda: search(anon, SUFFIX, ldap.SCOPE_ONELEVEL))

# An alias leading to a referral object: the referral names what the client asked for.
TO_REF = "cn=to-ref,ou=aliases," + SUFFIX
for deref_name, deref in [("never", ldap.DEREF_NEVER), ("searching", ldap.DEREF_SEARCHING),
                          ("finding", ldap.DEREF_FINDING), ("always", ldap.DEREF_ALWAYS)]:
    anon.set_option(ldap.OPT_DEREF, deref)
    for name, scope in scopes:
        for base in [TO_REF, "cn=x," + TO_REF, "ou=aliases," + SUFFIX]:
            show("deref %s, search %s %s" % (deref_name, name, base),
                 lambda: search(anon, base, scope))
anon.set_option(ldap.OPT_DEREF, ldap.DEREF_NEVER)

# Paged results: a page resumes after its last entry, so references past it come again (as slapd).
from ldap.controls import SimplePagedResultsControl


def pages(conn, base, size):
    out, cookie = [], b""
    for _ in range(20):
        page = SimplePagedResultsControl(True, size=size, cookie=cookie)
        msgid = conn.search_ext(base, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"], serverctrls=[page])
        _, res, _, ctrls = conn.result3(msgid)
        out.append((sorted(dn for dn, _ in res if dn is not None),
                    sorted(sorted(urls) for dn, urls in res if dn is None)))
        cookie = next((c.cookie for c in ctrls if c.controlType == page.controlType), b"")
        if not cookie:
            break
    return repr(out)


show("paged by 1", lambda: pages(anon, REFS, 1))
show("paged by 2", lambda: pages(anon, REFS, 2))

show("compare at a referral", lambda: anon.compare_ext_s(REMOTE, "ou", b"remote"))
show("compare below a referral", lambda: anon.compare_ext_s("cn=x," + REMOTE, "ou", b"remote"))
show("compare with ManageDsaIT", lambda: anon.compare_ext_s(REMOTE, "ou", b"remote", serverctrls=MANAGE))
show("anonymous modify at a referral",
     lambda: anon.modify_ext_s(REMOTE, [(ldap.MOD_REPLACE, "description", [b"x"])]))

admin = root()
admin.set_option(ldap.OPT_REFERRALS, 0)
mod = [(ldap.MOD_REPLACE, "description", [b"changed"])]
role = [("objectClass", [b"organizationalRole"]), ("cn", [b"x"])]
for label, ctrls in [("", None), (" with ManageDsaIT", MANAGE)]:
    show("modify at a referral" + label, lambda: admin.modify_ext_s(REMOTE, mod, serverctrls=ctrls))
    show("modify below a referral" + label,
         lambda: admin.modify_ext_s("cn=x," + REMOTE, mod, serverctrls=ctrls))
    show("add below a referral" + label,
         lambda: admin.add_ext_s("cn=x," + REMOTE, role, serverctrls=ctrls))
    show("add two levels below a referral" + label,
         lambda: admin.add_ext_s("cn=y,cn=x," + TWO, role, serverctrls=ctrls))
    show("delete below a referral" + label,
         lambda: admin.delete_ext_s("cn=x," + REMOTE, serverctrls=ctrls))
    show("rename below a referral" + label,
         lambda: admin.rename_s("cn=x," + REMOTE, "cn=y", serverctrls=ctrls))
    show("rename at a referral" + label,
         lambda: admin.rename_s(TWO, "ou=two", serverctrls=ctrls))
show("delete at a referral", lambda: admin.delete_ext_s(TWO))
show("move an entry under a referral",
     lambda: admin.rename_s("uid=carol,ou=people," + SUFFIX, "uid=carol", REMOTE))
show("the changed referral object",
     lambda: admin.search_ext_s(REMOTE, ldap.SCOPE_BASE, "(objectClass=*)", ["description"],
                                serverctrls=MANAGE))
show("delete at a referral with ManageDsaIT", lambda: admin.delete_ext_s(TWO, serverctrls=MANAGE))
show("after the delete", lambda: search(anon, REFS, ldap.SCOPE_SUBTREE))
