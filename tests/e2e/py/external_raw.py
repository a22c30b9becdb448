"""SASL EXTERNAL over ldaps:// with a client certificate, sent on the wire whatever the client library would
offer (libsasl skips EXTERNAL when the server's CA hints do not match the certificate).

Usage: external_raw.py LDAPS_PORT CA_FILE CERT_FILE KEY_FILE. Prints the bind's result code and the
WhoAmI authzid afterwards.
"""
import socket
import ssl
import sys

import rawldap
from rawldap import integer, message, octets, tlv, whoami

port, ca_file, cert_file, key_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=ca_file)
ctx.load_cert_chain(cert_file, key_file)
sock = socket.create_connection(("127.0.0.1", port), timeout=10)
conn = rawldap.Conn(ctx.wrap_socket(sock, server_hostname="127.0.0.1"))

sasl = tlv(0xA3, octets(b"EXTERNAL"))
conn.send(message(1, tlv(0x60, integer(3) + octets(b"") + sasl)))
print("bind:", conn.recv().code)

conn.send(whoami(2))
reply = conn.recv()
print("whoami:", reply.code, (reply.value or b"").decode())
