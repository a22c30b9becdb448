"""StartTLS on the wire (RFC 4511 §4.14) with raw messages and Python's ssl module.

Usage: starttls_raw.py CA_FILE. Prints one line per step: the result code of each StartTLS attempt, and
whether the connection still answers afterwards.
"""
import socket
import ssl
import sys

import rawldap
from rawldap import message, octets, tlv, whoami

STARTTLS = "1.3.6.1.4.1.1466.20037"


def starttls(msgid, value=None):
    body = octets(STARTTLS, 0x80)
    if value is not None:
        body += octets(value, 0x81)
    return message(msgid, tlv(0x77, body))


def tls_wrap(conn, ca_file):
    ctx = ssl.create_default_context(cafile=ca_file)
    host, _ = rawldap.server_address()
    conn.sock = ctx.wrap_socket(conn.sock, server_hostname=host)
    return conn.sock.version()


ca_file = sys.argv[1]

# A value in the request is a protocol error; the connection stays usable.
c = rawldap.connect()
c.send(starttls(1, b"x"))
print("with value:", c.recv().code)
c.send(whoami(2))
print("with value, then whoami:", c.recv().code)
c.close()

# A StartTLS pipelined with another request is refused: that request is outstanding.
c = rawldap.connect()
c.send(starttls(1) + whoami(2))
got = sorted((m.msgid, m.code) for m in (c.recv(), c.recv()))
print("pipelined:", got)
c.close()

# The upgrade, then a second StartTLS over TLS.
c = rawldap.connect()
c.send(starttls(1))
first = c.recv()
print("first:", first.code, first.name)
print("protocol:", tls_wrap(c, ca_file))
c.send(starttls(2))
print("second:", c.recv().code)
c.send(whoami(3))
print("whoami over tls:", c.recv().code)
c.close()
