"""Whether the certificate an ldaps:// listener serves is the one in a PEM file.

Usage: servercert.py PORT PEM_FILE. Prints "same" or "different".
"""
import ssl
import sys

port = int(sys.argv[1])
served = ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate(("127.0.0.1", port)))
with open(sys.argv[2]) as f:
    expected = ssl.PEM_cert_to_DER_cert(f.read())
print("same" if served == expected else "different")
