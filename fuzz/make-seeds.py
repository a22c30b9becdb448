#!/usr/bin/env python3
"""Writes the fuzz seed corpus (fuzz/corpus/<target>/) from the project's own test data.

Filters come from the conformance corpus, DNs from the test LDIF, LDIF records from tests/e2e/data and
crates/harness/data (base.ldif), and
LDAPMessages of every operation are encoded here with a small BER writer. Deterministic: rerun after the
test data changes and commit the result.
"""
import hashlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"


def tlv(tag, content):
    n = len(content)
    if n < 0x80:
        head = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        head = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + head + content


def integer(v, tag=0x02):
    raw = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    return tlv(tag, raw)


def octets(s, tag=0x04):
    return tlv(tag, s.encode() if isinstance(s, str) else s)


def seq(*parts, tag=0x30):
    return tlv(tag, b"".join(parts))


def boolean(v):
    return tlv(0x01, b"\xff" if v else b"\x00")


def enum(v):
    return integer(v, 0x0A)


def message(mid, op, controls=None):
    parts = [integer(mid), op]
    if controls:
        parts.append(seq(*controls, tag=0xA0))
    return seq(*parts)


def control(oid, critical=None, value=None):
    parts = [octets(oid)]
    if critical is not None:
        parts.append(boolean(critical))
    if value is not None:
        parts.append(octets(value))
    return seq(*parts)


def filter_ber(text):
    """Encodes the simple filter forms the seeds use; anything else becomes a presence filter."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    if text[:1] in "&|":
        tag = 0xA0 if text[0] == "&" else 0xA1
        return seq(*(filter_ber(p) for p in split_parts(text[1:])), tag=tag)
    if text[:1] == "!":
        return tlv(0xA2, filter_ber(text[1:]))
    m = re.match(r"^([^=<>~:]+)(=|>=|<=|~=)(.*)$", text, re.S)
    if not m:
        return octets("objectClass", 0x87)
    attr, op, value = m.groups()
    if op == "=" and value == "*":
        return octets(attr, 0x87)
    if op == "=" and "*" in value:
        pieces = value.split("*")
        items = []
        if pieces[0]:
            items.append(octets(pieces[0], 0x80))
        items += [octets(p, 0x81) for p in pieces[1:-1] if p]
        if pieces[-1]:
            items.append(octets(pieces[-1], 0x82))
        return seq(octets(attr), seq(*items), tag=0xA4)
    tag = {"=": 0xA3, ">=": 0xA5, "<=": 0xA6, "~=": 0xA8}[op]
    return seq(octets(attr), octets(value), tag=tag)


def split_parts(text):
    parts, depth, start = [], 0, None
    for i, c in enumerate(text):
        if c == "(":
            if depth == 0:
                start = i
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and start is not None:
                parts.append(text[start : i + 1])
    return parts


def search(mid, base, flt, scope=2, attrs=(), controls=None):
    op = seq(
        octets(base),
        enum(scope),
        enum(0),
        integer(0),
        integer(0),
        boolean(False),
        filter_ber(flt),
        seq(*(octets(a) for a in attrs)),
        tag=0x63,
    )
    return message(mid, op, controls)


def write(target, items):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    for item in items:
        data = item if isinstance(item, bytes) else item.encode()
        name = hashlib.sha1(data).hexdigest()
        (d / name).write_bytes(data)


def main():
    corpus = ROOT / "tests" / "conformance" / "corpus"
    filters = []
    for f in sorted(corpus.glob("*.corpus")):
        for line in f.read_text().splitlines():
            m = re.search(r"filter=(\(.*\))(?: \w+=|$)", line)
            if m:
                filters.append(m.group(1))
    filters = list(dict.fromkeys(filters))
    ldif_dirs = [ROOT / "tests" / "e2e" / "data", ROOT / "crates" / "harness" / "data"]
    ldif_files = sorted((f for d in ldif_dirs for f in d.glob("*.ldif")), key=lambda f: f.name)
    dns, records = [], []
    for f in ldif_files:
        for record in f.read_text().split("\n\n"):
            if record.strip():
                records.append(record.strip() + "\n")
            m = re.match(r"^dn: (.*)$", record.strip(), re.M)
            if m:
                dns.append(m.group(1))
    dns = list(dict.fromkeys(dns))

    base = "dc=example,dc=com"
    msgs = [
        message(1, seq(integer(3), octets(""), octets("", 0x80), tag=0x60)),
        message(1, seq(integer(3), octets("cn=admin," + base), octets("secret", 0x80), tag=0x60)),
        message(2, seq(integer(3), octets(""), seq(octets("EXTERNAL"), tag=0xA3), tag=0x60)),
        message(2, seq(integer(3), octets(""), seq(octets("SCRAM-SHA-256"), octets("n,,n=alice,r=abc"), tag=0xA3), tag=0x60)),
        message(3, tlv(0x42, b"")),
        message(4, integer(2, 0x50)),
        message(5, octets("uid=alice,ou=people," + base, 0x4A)),
        message(6, seq(octets("uid=new," + base), seq(seq(octets("objectClass"), seq(octets("top"), octets("person"))), seq(octets("cn"), seq(octets("New"))), seq(octets("sn"), seq(octets("N")))), tag=0x68)),
        message(7, seq(octets("uid=alice,ou=people," + base), seq(*(seq(enum(op), seq(octets("description"), seq(octets("x")))) for op in (0, 1, 2, 3))), tag=0x66)),
        message(8, seq(octets("uid=alice,ou=people," + base), octets("uid=alicia"), boolean(True), octets("ou=groups," + base, 0x80), tag=0x6C)),
        message(9, seq(octets("uid=alice,ou=people," + base), seq(octets("cn"), octets("Alice Adams")), tag=0x6E)),
        message(10, seq(octets("1.3.6.1.4.1.4203.1.11.3", 0x80), tag=0x77)),
        message(11, seq(octets("1.3.6.1.4.1.4203.1.11.1", 0x80), octets(seq(octets("uid=alice", 0x80), octets("new", 0x82)), 0x81), tag=0x77)),
        message(12, seq(octets("1.3.6.1.4.1.1466.20037", 0x80), tag=0x77)),
        search(13, base, "(objectClass=*)", controls=[control("1.2.840.113556.1.4.319", True, seq(integer(10), octets("")))]),
        search(14, base, "(uid=alice)", controls=[control("2.16.840.1.113730.3.4.2"), control("1.3.6.1.1.12", True, filter_ber("(cn=*)")), control("1.3.6.1.1.13.1", False, seq(octets("cn")))]),
        search(15, "", "(objectClass=*)", scope=0, attrs=("*", "+", "1.1", "@inetOrgPerson")),
    ]
    msgs += [search(100 + i, base, f, attrs=("cn",)) for i, f in enumerate(filters[:200])]
    msgs += [search(400 + i, dn, "(objectClass=*)", scope=0) for i, dn in enumerate(dns[:50])]
    write("message", msgs)
    write("ber", msgs[:40])
    write("filter", filters + [filter_ber(f) for f in filters[:100]])
    write("dn", dns)
    write("ldif", records[:120])
    for target in ("message", "ber", "filter", "dn", "ldif"):
        print(target, len(list((OUT / target).iterdir())))


if __name__ == "__main__":
    main()
