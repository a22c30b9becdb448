"""A small application's life cycle: bind, search, add, modify (increment), compare, passwd, delete."""
import ldap
import ldap.modlist

from common import SUFFIX, connect, error_name, root, user_dn

admin = root()
print("root whoami: %s" % admin.whoami_s())

dn = "uid=pyuser,ou=people," + SUFFIX
entry = {
    "objectClass": [b"inetOrgPerson", b"posixAccount"],
    "uid": [b"pyuser"],
    "cn": ["Py Üser".encode()],
    "sn": [b"User"],
    "uidNumber": [b"2000"],
    "gidNumber": [b"1000"],
    "homeDirectory": [b"/home/pyuser"],
    "userPassword": [b"py-initial"],
}
admin.add_s(dn, ldap.modlist.addModlist(entry))
print("added %s" % dn)
try:
    admin.add_s(dn, ldap.modlist.addModlist(entry))
except ldap.LDAPError as e:
    print("add again: " + error_name(e))

admin.modify_s(dn, [(ldap.MOD_INCREMENT, "uidNumber", [b"7"]),
                    (ldap.MOD_ADD, "mail", [b"py@example.com", b"py2@example.com"])])
got = admin.search_s(dn, ldap.SCOPE_BASE, attrlist=["uidNumber", "mail", "cn"])[0][1]
print("after modify: uidNumber=%s mail=%s cn=%s" % (
    got["uidNumber"][0].decode(), sorted(v.decode() for v in got["mail"]), got["cn"][0].decode()))

print("compare uidNumber=2007: %s" % admin.compare_s(dn, "uidNumber", b"2007"))
print("compare uidNumber=2000: %s" % admin.compare_s(dn, "uidNumber", b"2000"))

user = connect(dn, "py-initial")
print("user whoami: %s" % user.whoami_s())
_, generated = user.passwd_s(dn, "py-initial", None, extract_newpw=True)
print("generated a password: %s" % bool(generated))
new_pw = generated.genPasswd
again = connect(dn, new_pw.decode() if isinstance(new_pw, bytes) else new_pw)
print("bind with generated: %s" % again.whoami_s())
try:
    connect(dn, "py-initial")
    print("bind with old password: accepted")
except ldap.LDAPError as e:
    print("bind with old password: " + error_name(e))

admin.delete_s(dn)
try:
    admin.search_s(dn, ldap.SCOPE_BASE)
except ldap.LDAPError as e:
    print("search deleted entry: " + error_name(e))
