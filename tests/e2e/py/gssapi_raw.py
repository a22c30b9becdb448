"""SASL GSSAPI binds python-ldap sends by hand (no Kerberos library on the client side): a first token
that is no Kerberos token. Prints its result code and text."""

import os

import ldap


def bind(credentials):
    conn = ldap.initialize(os.environ["LDAP_URL"])
    conn.protocol_version = 3
    try:
        conn.sasl_bind_s("", "GSSAPI", credentials)
        return "0"
    except ldap.LDAPError as e:
        info = e.args[0]
        return "%s %s" % (info.get("result"), info.get("info", ""))
    finally:
        conn.unbind_s()


print("garbage token:", bind(b"\x60\x03garbage"))
