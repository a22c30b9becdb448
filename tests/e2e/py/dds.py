"""Dynamic entries (RFC 2589, slapd's dds overlay) over raw sockets: dynamicObject entries, their
entryTtl and entryExpireTimestamp, the Refresh extended operation and its errors, the limits of
the overlay's configuration, and expiry."""
import sys
import time

from rawldap import children, octets, parse_tlv, present, tlv, integer
from rawops import PEOPLE, ROOT, SUFFIX, Session, describe, extended, modify, delete, search_body

REFRESH = "1.3.6.1.4.1.1466.101.119.1"


def refresh_value(dn, ttl):
    return tlv(0x30, octets(dn, 0x80) + integer(ttl, 0x81))


def entry(dn, classes, extra=()):
    rdn_attr, rdn_value = dn.split(",")[0].split("=")
    attrs = [("objectClass", classes), (rdn_attr, [rdn_value])] + list(extra)
    body = b"".join(tlv(0x30, octets(a) + tlv(0x31, b"".join(octets(v) for v in vs)))
                    for a, vs in attrs)
    return tlv(0x68, octets(dn) + tlv(0x30, body))


def read(s, dn, attrs):
    """The values of `attrs` of `dn` (a base search as root)."""
    msgid = s.next
    s.next += 1
    body = tlv(0x63, octets(dn) + integer(0, 0x0A) + integer(0, 0x0A) + integer(0) + integer(0)
               + tlv(0x01, b"\x00") + present("objectClass")
               + tlv(0x30, b"".join(octets(a) for a in attrs)))
    s.conn.send(tlv(0x30, integer(msgid) + body))
    found = {}
    while True:
        raw = s.conn.recv_raw()
        tag, st, en = parse_tlv(raw, 0)
        op, content = children(raw, st, en)[1]
        if op == 0x64:
            parts = children(content, 0, len(content))
            for _, attr in children(parts[1][1], 0, len(parts[1][1])):
                fields = children(attr, 0, len(attr))
                name = fields[0][1].decode()
                found[name] = [v.decode() for _, v in children(fields[1][1], 0, len(fields[1][1]))]
        elif op == 0x65:
            return found, describe(raw)


OU = "ou=dyn," + SUFFIX
if len(sys.argv) > 1 and sys.argv[1] == "disabled":
    s = Session()
    s.say("add a static container", entry(OU, ["organizationalUnit"]))
    s.say("add a dynamic entry", entry("cn=d1," + OU, ["device", "dynamicObject"]))
    s.say("refresh it", extended(REFRESH, refresh_value("cn=d1," + OU, 100)))
    sys.exit(0)

s = Session()
s.say("add a static container", entry(OU, ["organizationalUnit"]))
s.say("add a dynamic entry", entry("cn=d1," + OU, ["device", "dynamicObject"]))
found, done = read(s, "cn=d1," + OU, ["entryTtl", "entryExpireTimestamp", "objectClass"])
print("d1:", sorted(found), "entryTtl", found.get("entryTtl"), done)
s.say("add a dynamic entry giving entryTtl", entry("cn=d2," + OU, ["device", "dynamicObject"],
                                                  [("entryTtl", ["100"])]))
s.say("add a static entry under a dynamic one", entry("cn=s1,cn=d1," + OU, ["device"]))
s.say("add a dynamic entry under a dynamic one", entry("cn=d3,cn=d1," + OU, ["device", "dynamicObject"]))
s.say("refresh d1 to 100", extended(REFRESH, refresh_value("cn=d1," + OU, 100)))
found, done = read(s, "cn=d1," + OU, ["entryTtl"])
print("d1 entryTtl", found.get("entryTtl"))
s.say("refresh d1 above the maximum", extended(REFRESH, refresh_value("cn=d1," + OU, 100000)))
s.say("refresh d1 below the minimum", extended(REFRESH, refresh_value("cn=d1," + OU, 1)))
s.say("refresh d1 to 0", extended(REFRESH, refresh_value("cn=d1," + OU, 0)))
s.say("refresh a static entry", extended(REFRESH, refresh_value(OU, 100)))
s.say("refresh a missing entry", extended(REFRESH, refresh_value("cn=none," + OU, 100)))
s.say("refresh without a value", extended(REFRESH))
s.say("refresh with a bad value", extended(REFRESH, b"\x30\x00"))
s.say("modify entryTtl", modify("cn=d1," + OU, "entryTtl", "50"))
s.say("modify entryExpireTimestamp", modify("cn=d1," + OU, "entryExpireTimestamp", "20300101000000Z"))
s.say("remove dynamicObject", modify("cn=d1," + OU, "objectClass", "dynamicObject", 1))
s.say("add dynamicObject to a static entry", modify(OU, "objectClass", "dynamicObject", 0))
s.say("add a static entry to move", entry("cn=s2," + OU, ["device"]))
s.say("move a static entry under a dynamic one", tlv(0x6C, octets("cn=s2," + OU) + octets("cn=s2")
                                                    + tlv(0x01, b"\xff")
                                                    + octets("cn=d1," + OU, 0x80)))
s.say("delete the static entry", delete("cn=s2," + OU))
s.say("add a fourth dynamic entry", entry("cn=d4," + OU, ["device", "dynamicObject"]))
s.say("add a fifth dynamic entry", entry("cn=d5," + OU, ["device", "dynamicObject"]))
s.say("add a sixth dynamic entry, over the limit", entry("cn=d6," + OU, ["device", "dynamicObject"]))
s.say("delete a dynamic entry with a dynamic child", delete("cn=d1," + OU))
anon = Session(as_root=False)
anon.say("anonymous refresh", extended(REFRESH, refresh_value("cn=d1," + OU, 100)))
user = Session(user=("uid=alice," + PEOPLE, "alice-pw"))
user.say("alice refreshes", extended(REFRESH, refresh_value("cn=d1," + OU, 100)))
s.say("refresh d5 to 2", extended(REFRESH, refresh_value("cn=d5," + OU, 2)))
s.say("refresh d3 to 2", extended(REFRESH, refresh_value("cn=d3,cn=d1," + OU, 2)))
s.say("refresh d1 to 2", extended(REFRESH, refresh_value("cn=d1," + OU, 2)))
deadline = time.time() + 15
while time.time() < deadline:
    found, done = read(s, "cn=d1," + OU, ["entryTtl"])
    if "code 32" in done:
        break
    time.sleep(0.2)
# A new connection: the polls above took a varying number of message IDs.
s.close()
s = Session()
for name in ["cn=d5," + OU, "cn=d3,cn=d1," + OU, "cn=d1," + OU, "cn=d4," + OU]:
    found, done = read(s, name, ["entryTtl"])
    print("%s after its time: %s" % (name, done))
s.say("now a sixth dynamic entry fits", entry("cn=d6," + OU, ["device", "dynamicObject"]))
