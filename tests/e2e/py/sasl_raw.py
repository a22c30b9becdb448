"""SCRAM exchanges by hand over a raw socket, for what libsasl hides: the salt the server shows for
an unknown user, channel-binding flags, and other requests in the middle of an exchange.

Prints one line per check: "name: value".
"""
import base64

import rawldap
from rawldap import children, integer, message, octets, parse_tlv, tlv


class RawMessage(rawldap.Message):
    def __init__(self, raw):
        super().__init__(raw)
        _, s, e = parse_tlv(raw, 0)
        _, body = children(raw, s, e)[1]
        self.creds = None
        for tag, value in children(body, 0, len(body)):
            if tag == 0x87:
                self.creds = value


rawldap.Message = RawMessage


def sasl_bind(msgid, mech, creds):
    sasl = octets(mech) + (octets(creds) if creds is not None else b"")
    return message(msgid, tlv(0x60, integer(3) + octets("") + tlv(0xA3, sasl)))


def first(conn, msgid, text, mech="SCRAM-SHA-256"):
    conn.send(sasl_bind(msgid, mech, text.encode()))
    return conn.recv()


def salt_of(reply):
    fields = dict(part.split("=", 1) for part in reply.creds.decode().split(","))
    return fields["s"]


def fresh_first(text):
    """A client-first-message on a new connection (on the same one it would continue the exchange)."""
    c = rawldap.connect()
    reply = first(c, 1, text)
    c.close()
    return reply


a = fresh_first("n,,n=ghost-user,r=abcdefgh")
b = fresh_first("n,,n=ghost-user,r=ijklmnop")
c = fresh_first("n,,n=other-ghost,r=ijklmnop")
conn = rawldap.connect()
first(conn, 1, "n,,n=ghost-user,r=abcdefgh")
print(f"in progress: {a.code}")
print(f"same mock salt twice: {salt_of(a) == salt_of(b)}")
print(f"other name, other salt: {salt_of(a) != salt_of(c)}")
base64.b64decode(salt_of(a))

# A search in the middle of an exchange is refused and ends it.
conn.send(rawldap.search(4, "", rawldap.present("objectClass"), scope=0))
print(f"search during exchange: {conn.recv().code}")
conn.send(sasl_bind(5, "SCRAM-SHA-256", b"c=biws,r=abcdefghXYZ,p=AAAA"))
print(f"final message after the abort: {conn.recv().code}")

# Channel binding is refused; "y" is accepted. A second message with the same mechanism continues
# the exchange, so a new client-first-message there fails.
print(f"p= flag: {first(conn, 6, 'p=tls-unique,,n=alice,r=abcdefgh').code}")
print(f"y flag: {first(conn, 7, 'y,,n=alice,r=abcdefgh').code}")
print(f"first message again: {first(conn, 10, 'n,,n=alice,r=abcdefgh').code}")
# Another mechanism abandons the exchange: EXTERNAL over TCP is authMethodNotSupported (as slapd).
conn.send(sasl_bind(8, "EXTERNAL", None))
print(f"other mechanism: {conn.recv().code}")
# An unknown mechanism.
conn.send(sasl_bind(9, "DIGEST-MD5", None))
print(f"unknown mechanism: {conn.recv().code}")
conn.close()
