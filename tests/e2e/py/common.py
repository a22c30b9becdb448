"""Shared connection helpers for the python-ldap scripts of the end-to-end suite.

The Rust harness passes the server in the environment: LDAP_URL, LDAPI_URL, ROOT_DN, ROOT_PW, SUFFIX.
"""
import os

import ldap

URL = os.environ["LDAP_URL"]
SUFFIX = os.environ["SUFFIX"]
ROOT_DN = os.environ["ROOT_DN"]
ROOT_PW = os.environ["ROOT_PW"]


def connect(dn=None, pw=None, url=URL):
    conn = ldap.initialize(url)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 30)
    if dn is not None:
        conn.simple_bind_s(dn, pw)
    return conn


def root():
    return connect(ROOT_DN, ROOT_PW)


def user_dn(uid):
    return "uid=%s,ou=people,%s" % (uid, SUFFIX)


def error_name(exc):
    """The LDAP result as a stable string: class name and result code."""
    info = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
    return "%s (%s)" % (type(exc).__name__, info.get("result"))
