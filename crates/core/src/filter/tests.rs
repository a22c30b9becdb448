//! Filter evaluation tables: every filter kind, subtypes, options, Undefined propagation.

use canopy_proto::Filter;
use canopy_schema::Schema;

use super::testutil::entry;
use super::{evaluate, PreparedFilter, Ternary};
use crate::entry::{Attribute, Entry};
use crate::wire::{encode_entry, StoredEntry, StoredView};

const T: Ternary = Ternary::True;
const F: Ternary = Ternary::False;
const U: Ternary = Ternary::Undefined;

fn person(schema: &Schema) -> Entry {
    entry(
        schema,
        "dn: uid=jdoe,ou=People,dc=example,dc=com
         objectClass: inetOrgPerson
         objectClass: posixAccount
         uid: JDoe
         cn: John Doe
         cn;lang-en: John
         cn;lang-en-us: Johnny
         sn: Doe
         mail: jdoe@example.com
         description: Grüße aus Köln
         uidNumber: 1000
         gidNumber: 100
         homeDirectory: /home/jdoe",
    )
}

fn computed() -> Vec<Attribute> {
    vec![
        Attribute {
            desc: "hasSubordinates".into(),
            values: vec![b"FALSE".to_vec()],
        },
        Attribute {
            desc: "entryDN".into(),
            values: vec![b"uid=jdoe,ou=People,dc=example,dc=com".to_vec()],
        },
    ]
}

fn check(schema: &Schema, e: &Entry, filter: &str, expected: Ternary) {
    let parsed = Filter::parse(filter).unwrap();
    let got = evaluate(schema, e, &computed(), &parsed);
    assert_eq!(got, expected, "{filter}");
    // The stored form viewed in place answers as the entry in memory does.
    let mut bytes = Vec::new();
    encode_entry(schema, e, &mut bytes);
    let stored = StoredEntry::parse(&bytes).unwrap();
    let view = StoredView::new(&stored);
    let in_place = PreparedFilter::new(schema, &parsed).evaluate(&view, &computed());
    assert_eq!(in_place, expected, "{filter} on the stored view");
}

#[test]
fn equality_subtypes_options_and_object_classes() {
    let schema = Schema::builtin();
    let e = person(&schema);
    let table = [
        ("(objectClass=inetOrgPerson)", T),
        ("(objectclass=INETORGPERSON)", T),
        ("(objectClass=person)", T),
        ("(objectClass=organizationalPerson)", T),
        ("(objectClass=top)", T),
        ("(objectClass=2.5.6.6)", T),
        ("(objectClass=organization)", F),
        ("(cn=John Doe)", T),
        ("(CN=JOHN DOE)", T),
        ("(commonName=john  doe)", T),
        ("(cn=John)", T),
        ("(cn=Jane)", F),
        ("(name=Doe)", T),
        ("(name=johnny)", T),
        ("(cn;lang-en=John)", T),
        ("(cn;lang-en=John Doe)", F),
        ("(cn;lang-en=Johnny)", F),
        ("(cn;lang-en-us=Johnny)", T),
        ("(cn;lang-de=John)", F),
        ("(uid=jdoe)", T),
        ("(mail=JDOE@EXAMPLE.COM)", T),
        ("(homeDirectory=/HOME/jdoe)", F),
        ("(homeDirectory=/home/jdoe)", T),
        ("(uidNumber=1000)", T),
        ("(uidNumber=abc)", U),
        ("(foo=bar)", U),
        ("(cn;x-foo=John)", U),
        ("(jpegPhoto=x)", U),
        ("(hasSubordinates=FALSE)", T),
        ("(hasSubordinates=TRUE)", F),
        ("(entryDN=uid=jdoe,ou=People,dc=example,dc=com)", T),
        ("(entryDN=UID=JDOE, OU=people,DC=example,dc=COM)", T),
        ("(entryDN=uid=jdoe,dc=example,dc=com)", F),
        ("(entryDN=not a dn)", U),
    ];
    for (filter, expected) in table {
        check(&schema, &e, filter, expected);
    }
}

#[test]
fn boolean_combinations_with_undefined() {
    let schema = Schema::builtin();
    let e = person(&schema);
    let table = [
        ("(!(foo=bar))", U),
        ("(!(cn=x))", T),
        ("(!(cn=John))", F),
        ("(&(cn=John Doe)(foo=bar))", U),
        ("(&(cn=x)(foo=bar))", F),
        ("(&(cn=John Doe)(sn=Doe))", T),
        ("(|(cn=John Doe)(foo=bar))", T),
        ("(|(cn=x)(foo=bar))", U),
        ("(|(cn=x)(sn=y))", F),
        ("(!(&(cn=x)(foo=bar)))", T),
        ("(!(|(cn=x)(foo=bar)))", U),
    ];
    for (filter, expected) in table {
        check(&schema, &e, filter, expected);
    }
    let empty_and = Filter::And(vec![]);
    let empty_or = Filter::Or(vec![]);
    assert_eq!(evaluate(&schema, &e, &[], &empty_and), T);
    assert_eq!(evaluate(&schema, &e, &[], &empty_or), F);
}

#[test]
fn ordering_substrings_presence_approx() {
    let schema = Schema::builtin();
    let e = person(&schema);
    let table = [
        ("(uidNumber>=1000)", T),
        ("(uidNumber>=999)", T),
        ("(uidNumber>=1001)", F),
        ("(uidNumber>=200)", T),
        ("(uidNumber<=200)", F),
        ("(uidNumber<=1000)", T),
        ("(uidNumber>=abc)", U),
        ("(!(uidNumber>=abc))", U),
        ("(sn>=D)", U),
        ("(description=*öln)", T),
        ("(description=*ÖLN)", T),
        ("(description=GRÜSSE*)", F),
        ("(description=grüße*)", T),
        ("(description=*aus*)", T),
        ("(description=*xyz*)", F),
        ("(cn=j*n*e)", T),
        ("(cn=*ohn d*)", T),
        ("(cn=*doe*john*)", F),
        ("(name=jo*ny)", T),
        ("(cn;lang-en=*ny)", F),
        ("(mail=JDOE@*)", T),
        ("(uidNumber=1*)", U),
        ("(homeDirectory=/home*)", U),
        ("(foo=a*)", U),
        ("(mail=*)", T),
        ("(telephoneNumber=*)", F),
        ("(name=*)", T),
        ("(cn;lang-=*)", T),
        ("(cn;lang-de=*)", F),
        ("(foo=*)", U),
        ("(hasSubordinates=*)", T),
        ("(cn~=john doe)", T),
        ("(sn~=xyzzy)", F),
        ("(uidNumber~=1000)", T),
        ("(foo~=x)", U),
    ];
    for (filter, expected) in table {
        check(&schema, &e, filter, expected);
    }
}

#[test]
fn extensible_matching() {
    let schema = Schema::builtin();
    let e = person(&schema);
    let table = [
        ("(cn:caseExactMatch:=John Doe)", T),
        ("(cn:caseExactMatch:=john doe)", F),
        ("(cn:2.5.13.5:=John Doe)", T),
        // uidNumber 1000 is 0b11_1110_1000: bit 8 is set, bit 1 is not.
        ("(uidNumber:1.2.840.113556.1.4.803:=8)", T),
        ("(uidNumber:1.2.840.113556.1.4.803:=9)", F),
        ("(uidNumber:1.2.840.113556.1.4.804:=9)", T),
        ("(uidNumber:1.2.840.113556.1.4.804:=3)", F),
        ("(:caseExactMatch:=John Doe)", T),
        ("(:caseExactMatch:=john doe)", F),
        ("(cn:=john doe)", T),
        ("(uid:caseExactMatch:=jdoe)", F),
        ("(uid:dn:caseExactMatch:=jdoe)", T),
        ("(ou=people)", F),
        ("(ou:=people)", F),
        ("(ou:dn:=people)", T),
        ("(:dn:2.5.13.2:=people)", T),
        ("(:2.5.13.2:=people)", F),
        ("(:dn:caseIgnoreMatch:=example)", F),
        ("(dc:dn:=example)", T),
        ("(cn:integerMatch:=1)", U),
        ("(cn:fooMatch:=x)", U),
        ("(:fooMatch:=x)", U),
        ("(foo:=x)", U),
        ("(uidNumber:integerOrderingMatch:=2000)", T),
        ("(uidNumber:integerOrderingMatch:=1000)", F),
        ("(:integerMatch:=1000)", T),
        ("(:integerMatch:=100)", T),
        ("(:integerMatch:=5)", F),
        ("(uidNumber:integerMatch:=abc)", U),
        ("(cn:caseIgnoreSubstringsMatch:=john)", U),
    ];
    for (filter, expected) in table {
        check(&schema, &e, filter, expected);
    }
}

#[test]
fn object_class_chain_from_stored_values_only() {
    let schema = Schema::builtin();
    let e = entry(
        &schema,
        "dn: cn=x,dc=example,dc=com
         objectClass: organizationalPerson
         cn: x
         sn: y",
    );
    check(&schema, &e, "(objectClass=person)", T);
    check(&schema, &e, "(objectClass=top)", T);
    check(&schema, &e, "(objectClass=inetOrgPerson)", F);
    // slapd: a class the schema does not know is Undefined, `(!(objectClass=topx))` is empty.
    check(&schema, &e, "(objectClass=noSuchClass)", U);
}

/// Filters whose results were compared with Debian's slapd 2.5 on the same entry.
#[test]
fn slapd_observations() {
    let schema = Schema::builtin();
    let e = entry(
        &schema,
        "dn: cn=e1,dc=example,dc=com
         objectClass: inetOrgPerson
         objectClass: posixAccount
         objectClass: extensibleObject
         cn: e1
         cn: John Smith
         sn: Smith
         uid: e1
         uidNumber: -100000000000000000000
         gidNumber: 3
         homeDirectory: /home/e1
         mail: John.Smith@Example.COM
         telephoneNumber: +1 555-123 4567
         internationaliSDNNumber: 12 34 56
         postalAddress: 1 Main St $ Springfield
         description: Caf\u{e9} \u{FF46}\u{FF55}ll
         seeAlso: cn=foo,dc=example,dc=com",
    );
    let table = [
        // NFKC and no RFC 4518 mapping.
        ("(description=caf\\65\\cc\\81 full)", T),
        ("(description=*FULL)", T),
        // IA5 substring parts lose their end spaces; directory string parts keep them.
        ("(mail=john *)", T),
        // Full-width letters are no IA5 assertion, even where NFKC would make them ASCII.
        ("(!(mail=*\u{FF4A}\u{FF4F}\u{FF48}\u{FF4E}*))", U),
        // Certificate rules take serial-and-issuer assertions, which are not implemented: Undefined.
        ("(!(userCertificate;binary=7))", U),
        ("(!(userCertificate~=7))", U),
        ("(mail=* john*)", T),
        ("(mail=* *)", T),
        ("(cn=* *)", T),
        ("(cn=john *)", T),
        // Numeric and telephone parts with nothing significant are Undefined.
        ("(telephoneNumber=*-*)", U),
        ("(telephoneNumber=- *)", U),
        ("(internationaliSDNNumber=* *)", U),
        ("(telephoneNumber=*1 555-1*)", T),
        // A postal address value is prepared per line, assertion parts as plain strings.
        ("(postalAddress=*st$spr*)", T),
        ("(postalAddress=*st $ spr*)", F),
        // `~=` is equality except for the phonetic string rules.
        ("(cn~=smyth)", T),
        ("(cn~=jon smith)", T),
        ("(cn~=smith jon)", F),
        ("(mail~=jon@x)", T),
        ("(description~=\\e6\\bc\\a2)", F),
        ("(telephoneNumber~=+15551234567)", T),
        ("(telephoneNumber~=+1)", F),
        ("(postalAddress~=1 main st$springfield)", T),
        ("(gidNumber~=3)", T),
        ("(seeAlso~=CN=FOO, DC=example, DC=com)", T),
        // The legacy ';' RDN separator.
        ("(seeAlso=cn=foo;dc=example;dc=com)", T),
        // Rules usable with a syntax, extensible match.
        ("(telephoneNumber:caseIgnoreMatch:=+1 555-123 4567)", T),
        ("(telephoneNumber:caseExactOrderingMatch:=5)", T),
        (
            "(uidNumber:integerFirstComponentMatch:=-100000000000000000000)",
            U,
        ),
        ("(cn:directoryStringFirstComponentMatch:=e1)", U),
        // The first value a rule cannot evaluate ends the search for a match: Undefined.
        ("(:integerBitAndMatch:=1)", U),
        ("(gidNumber:integerBitAndMatch:=1)", T),
        ("(:integerMatch:=3)", T),
        // Class-valued types: superclasses count, unknown classes and spaces are Undefined,
        // naming objectIdentifierMatch is Undefined.
        ("(objectClass=top)", T),
        ("(objectClass=topx)", U),
        ("(objectClass=1.2.3.4)", U),
        ("(objectClass= person)", U),
        ("(objectClass~=person)", T),
        ("(objectClass~=posixAccountx)", U),
        ("(objectClass:=top)", T),
        ("(objectClass:dn:=2.5.6.6)", T),
        ("(objectClass:objectIdentifierMatch:=inetOrgPerson)", U),
        ("(objectClass:2.5.13.0:=top)", U),
        ("(:objectIdentifierMatch:=top)", U),
        ("(:objectIdentifierMatch:=2.5.6.0)", F),
        ("(:dn:objectIdentifierMatch:=3000)", F),
        // Without a type only stored attributes count (not entryDN, hasSubordinates).
        ("(:booleanMatch:=FALSE)", F),
        // With a type, hasSubordinates is still not computed (the conformance run shows slapd matching no
        // entry with `(hasSubordinates:=FALSE)` or `(hasSubordinates:=TRUE)`).
        ("(hasSubordinates:booleanMatch:=FALSE)", F),
        ("(hasSubordinates:=TRUE)", F),
        ("(hasSubordinates:=)", U),
        (
            "(:distinguishedNameMatch:=uid=jdoe,ou=People,dc=example,dc=com)",
            F,
        ),
        // Substring parts: an all-space initial never matches; letters are invalid for numbers.
        ("(cn= *)", F),
        ("(cn= john*)", T),
        ("(cn=* )", T),
        ("(internationaliSDNNumber=*1x*)", U),
    ];
    let extra = vec![Attribute {
        desc: "subschemaSubentry".into(),
        values: vec![b"cn=Subschema".to_vec()],
    }];
    for (filter, expected) in [
        ("(subschemaSubentry=*)", T),
        ("(subschemaSubentry=cn=Subschema)", F),
        ("(2.5.18.10=cn=subschema)", F),
    ] {
        let got = evaluate(&schema, &e, &extra, &Filter::parse(filter).unwrap());
        assert_eq!(got, expected, "{filter}");
    }
    for (filter, expected) in table {
        check(&schema, &e, filter, expected);
    }
}

#[test]
fn only_object_class_presence_matches_every_entry() {
    let schema = Schema::builtin();
    for (text, every) in [
        ("(objectClass=*)", true),
        ("(OBJECTCLASS=*)", true),
        ("(2.5.4.0=*)", true),
        ("(cn=*)", false),
        ("(objectClass;x-opt=*)", false),
        ("(objectClass=top)", false),
        ("(!(objectClass=*))", false),
    ] {
        let filter = Filter::parse(text).unwrap();
        let prepared = super::PreparedFilter::new(&schema, &filter);
        assert_eq!(prepared.matches_every_entry(), every, "{text}");
    }
}
