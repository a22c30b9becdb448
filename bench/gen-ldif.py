#!/usr/bin/python3
"""Write a deterministic DirectoryMark-like LDIF for dc=example,dc=com.

The suffix entry, ten organizationalUnits and N inetOrgPerson entries of about
500 bytes each, spread round-robin over the units.  The uid values are
user0000000 .. user{N-1} zero-padded to seven digits, which is the form
ldclt's `-f uid=userXXXXXXX -r 0 -R N-1` pattern produces.  The same seed
always gives byte-identical output, so both servers load the same data.

Usage: gen-ldif.py [-n ENTRIES] [-s SEED] [-o FILE] [--passwords]
"""

import argparse
import random
import sys

SUFFIX = "dc=example,dc=com"

OUS = [
    "Accounting", "Engineering", "Human Resources", "Legal", "Marketing",
    "Operations", "Product Management", "Research", "Sales", "Support",
]

GIVEN = [
    "Aaron", "Abigail", "Adrian", "Alice", "Amir", "Ana", "Andrew", "Anika",
    "Ben", "Bianca", "Carlos", "Chen", "Chloe", "Daniel", "Dara", "David",
    "Elena", "Emma", "Ethan", "Fatima", "Felix", "Grace", "Hana", "Hugo",
    "Ines", "Isaac", "Jack", "Jana", "Jin", "Julia", "Kai", "Karim", "Laura",
    "Leo", "Lina", "Lucas", "Maya", "Mei", "Mia", "Noah", "Nora", "Olivia",
    "Omar", "Paul", "Priya", "Rafael", "Rosa", "Sam", "Sara", "Sofia",
    "Tariq", "Tom", "Uma", "Victor", "Wei", "Yara", "Yusuf", "Zoe",
]

SURNAMES = [
    "Abbott", "Adams", "Alvarez", "Anderson", "Bailey", "Baker", "Bauer",
    "Becker", "Brown", "Campbell", "Chen", "Clark", "Costa", "Davies", "Diaz",
    "Dubois", "Evans", "Fischer", "Garcia", "Gomez", "Green", "Hall", "Hansen",
    "Harris", "Hoffmann", "Ivanova", "Jackson", "Jensen", "Johnson", "Kim",
    "Klein", "Kowalski", "Lambert", "Lee", "Lopez", "Martin", "Meyer",
    "Moreau", "Murphy", "Nakamura", "Nguyen", "Novak", "Okafor", "Olsen",
    "Patel", "Perez", "Petrov", "Richter", "Rossi", "Santos", "Schmidt",
    "Silva", "Singh", "Smith", "Tanaka", "Taylor", "Thomas", "Walker", "Wang",
    "Weber", "Williams", "Wilson", "Wright", "Yamamoto", "Young", "Zhang",
]

TITLES = [
    "Engineer", "Senior Engineer", "Staff Engineer", "Manager",
    "Senior Manager", "Director", "Analyst", "Senior Analyst", "Consultant",
    "Specialist", "Coordinator", "Administrator", "Architect", "Technician",
]

CITIES = [
    ("Amsterdam", "1012 AB"), ("Berlin", "10115"), ("Boston", "02108"),
    ("Chicago", "60601"), ("Denver", "80202"), ("Dublin", "D02 X285"),
    ("Lisbon", "1100-148"), ("London", "EC1A 1BB"), ("Madrid", "28013"),
    ("Osaka", "530-0001"), ("Paris", "75001"), ("Seattle", "98101"),
    ("Singapore", "049145"), ("Sydney", "2000"), ("Toronto", "M5H 2N2"),
    ("Vienna", "1010"),
]

STREETS = [
    "Main Street", "Oak Avenue", "Park Road", "Station Road", "High Street",
    "Church Lane", "Mill Road", "King Street", "Queen Street", "Market Square",
    "River Drive", "Hill Crescent", "Elm Way", "Cedar Court", "Lake View",
]

WORDS = [
    "accounts", "budget", "clients", "contracts", "data", "deployment",
    "design", "directory", "documentation", "infrastructure", "integration",
    "inventory", "network", "onboarding", "operations", "partners", "payroll",
    "platform", "pricing", "procurement", "quality", "recruiting", "release",
    "reporting", "research", "security", "services", "storage", "support",
    "testing", "training", "vendors",
]


def person(rng, i, passwords):
    """Return the LDIF record of the i-th person as one string."""
    given = rng.choice(GIVEN)
    sn = rng.choice(SURNAMES)
    uid = "user%07d" % i
    ou = OUS[i % len(OUS)]
    city, postcode = rng.choice(CITIES)
    street = "%d %s" % (rng.randint(1, 999), rng.choice(STREETS))
    phone = "+1 %03d %03d %04d" % (
        rng.randint(200, 999), rng.randint(200, 999), rng.randint(0, 9999))
    title = rng.choice(TITLES)
    desc = "%s %s for %s, %s and %s in %s" % (
        title, ou, rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS),
        city)
    lines = [
        "dn: uid=%s,ou=%s,%s" % (uid, ou, SUFFIX),
        "objectClass: top",
        "objectClass: person",
        "objectClass: organizationalPerson",
        "objectClass: inetOrgPerson",
        "uid: " + uid,
        "cn: %s %s" % (given, sn),
        "sn: " + sn,
        "givenName: " + given,
        "mail: %s.%s.%d@example.com" % (given.lower(), sn.lower(), i),
        "telephoneNumber: " + phone,
        "title: " + title,
        "ou: " + ou,
        "employeeNumber: %d" % (100000 + i),
        "roomNumber: %d-%03d" % (rng.randint(1, 12), rng.randint(1, 400)),
        "l: " + city,
        "postalAddress: %s$%s %s" % (street, postcode, city),
        "postalCode: " + postcode,
        "description: " + desc,
    ]
    if passwords:
        lines.append("userPassword: password%d" % i)
    return "\n".join(lines) + "\n\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--entries", type=int, default=10000)
    ap.add_argument("-s", "--seed", type=int, default=42)
    ap.add_argument("-o", "--output", default="-")
    # Off by default: servers differ in whether anonymous readers see
    # userPassword, and the search figures should compare equal responses.
    ap.add_argument("--passwords", action="store_true",
                    help="give each person userPassword: password<N>")
    args = ap.parse_args()
    if not 0 <= args.entries <= 10_000_000:
        ap.error("entries must be between 0 and 10000000 (7-digit uids)")

    out = sys.stdout if args.output == "-" else open(
        args.output, "w", encoding="utf-8", newline="\n")
    rng = random.Random(args.seed)
    out.write("dn: %s\nobjectClass: top\nobjectClass: dcObject\n"
              "objectClass: organization\ndc: example\no: Example Corp\n\n"
              % SUFFIX)
    for ou in OUS:
        out.write("dn: ou=%s,%s\nobjectClass: top\n"
                  "objectClass: organizationalUnit\nou: %s\n\n"
                  % (ou, SUFFIX, ou))
    for i in range(args.entries):
        out.write(person(rng, i, args.passwords))
    if out is not sys.stdout:
        out.close()


if __name__ == "__main__":
    main()
