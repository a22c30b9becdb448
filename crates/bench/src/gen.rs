//! `bench gen`: DirectoryMark-like test data, byte-identical for the same arguments. Every field of person i
//! comes from its own random stream, so the load generator can recompute any entry's values from the seed
//! without reading the directory.

use std::io::{self, Write};

use base64::Engine as _;
use sha1::{Digest, Sha1};

use crate::rng::Rng;

/// The ten organizational units; person i lives under `OUS[i % 10]`.
pub const OUS: [&str; 10] = [
    "Accounting",
    "Engineering",
    "Human Resources",
    "Legal",
    "Marketing",
    "Operations",
    "Product Management",
    "Research",
    "Sales",
    "Support",
];

const GIVEN: [&str; 64] = [
    "Aaron", "Abigail", "Adrian", "Alice", "Amir", "Ana", "Andrew", "Anika", "Ben", "Bianca",
    "Carlos", "Chen", "Chloe", "Daniel", "Dara", "David", "Elena", "Emma", "Ethan", "Fatima",
    "Felix", "Grace", "Hana", "Hugo", "Ines", "Isaac", "Jack", "Jana", "Jin", "Julia", "Kai",
    "Karim", "Laura", "Leo", "Lina", "Lucas", "Maya", "Mei", "Mia", "Noah", "Nora", "Olivia",
    "Omar", "Paul", "Priya", "Rafael", "Rosa", "Sam", "Sara", "Sofia", "Tariq", "Tom", "Uma",
    "Victor", "Wei", "Yara", "Yusuf", "Zoe", "Ingrid", "Kofi", "Lars", "Nadia", "Oscar", "Pavel",
];

// Surnames are built from three syllables (32 x 32 x 16 = 16384 of them) so that an equality search on sn
// finds a handful of entries even at a million people, as in a real address book.
const SN_START: [&str; 32] = [
    "Al", "Bar", "Bel", "Cor", "Dan", "Del", "Ed", "Fal", "Gar", "Hal", "Har", "Ives", "Jor",
    "Kel", "Lan", "Mar", "Mor", "Nor", "Ol", "Pal", "Quin", "Ros", "Sal", "Ster", "Tal", "Thorn",
    "Ul", "Van", "Wal", "Whit", "York", "Zel",
];
const SN_MID: [&str; 32] = [
    "a", "an", "ber", "by", "ca", "den", "di", "el", "en", "er", "fi", "ga", "ham", "i", "in",
    "ke", "la", "lin", "ma", "mer", "mo", "ni", "o", "ra", "ri", "ro", "sa", "ter", "ti", "to",
    "va", "wen",
];
const SN_END: [&str; 16] = [
    "s", "son", "sen", "ford", "ton", "ley", "field", "wood", "er", "man", "berg", "dale", "more",
    "stein", "well", "by",
];

const TITLES: [&str; 14] = [
    "Engineer",
    "Senior Engineer",
    "Staff Engineer",
    "Manager",
    "Senior Manager",
    "Director",
    "Analyst",
    "Senior Analyst",
    "Consultant",
    "Specialist",
    "Coordinator",
    "Administrator",
    "Architect",
    "Technician",
];

const WORDS: [&str; 32] = [
    "accounts",
    "budget",
    "clients",
    "contracts",
    "data",
    "deployment",
    "design",
    "directory",
    "documentation",
    "infrastructure",
    "integration",
    "inventory",
    "network",
    "onboarding",
    "operations",
    "partners",
    "payroll",
    "platform",
    "pricing",
    "procurement",
    "quality",
    "recruiting",
    "release",
    "reporting",
    "research",
    "security",
    "services",
    "storage",
    "support",
    "testing",
    "training",
    "vendors",
];

/// Longest description value; bigger entries get more values rather than one huge one, so that the entry
/// size scaling also grows the number of values to encode, as in seed 001's 4880-byte entries.
const DESCRIPTION_CHUNK: usize = 200;

/// Parameters of `bench gen`.
#[derive(Debug, Clone)]
pub struct GenParams {
    pub entries: u64,
    pub seed: u64,
    pub entry_size: usize,
    pub suffix: String,
    pub passwords: bool,
}

/// The uid of person i (the form ldclt's `uid=userXXXXXXX` pattern produces).
pub fn uid(i: u64) -> String {
    format!("user{i:07}")
}

/// The DN of person i under `suffix`.
pub fn user_dn(i: u64, suffix: &str) -> String {
    format!("uid=user{i:07},ou={},{suffix}", OUS[(i % 10) as usize])
}

/// The cleartext password of person i in data generated with `--passwords`.
pub fn password(i: u64) -> String {
    format!("pw-user{i:07}")
}

pub fn mail(i: u64) -> String {
    format!("user{i:07}@example.com")
}

/// The given name and surname of person i, drawn first from the person's stream.
fn draw_names(rng: &mut Rng) -> (&'static str, String) {
    let given = rng.pick(&GIVEN);
    let sn = format!(
        "{}{}{}",
        rng.pick(&SN_START),
        rng.pick(&SN_MID),
        rng.pick(&SN_END)
    );
    (given, sn)
}

/// (givenName, sn) of person i for data generated with `seed`; cn is "givenName sn".
pub fn person_names(seed: u64, i: u64) -> (&'static str, String) {
    draw_names(&mut Rng::for_stream(seed, i))
}

/// `{SSHA}` of `password` with `salt`: base64(SHA1(password + salt) + salt), as slapd and canopy verify it.
pub fn ssha(password: &[u8], salt: &[u8]) -> String {
    let mut hasher = Sha1::new();
    hasher.update(password);
    hasher.update(salt);
    let mut raw = hasher.finalize().to_vec();
    raw.extend_from_slice(salt);
    format!(
        "{{SSHA}}{}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// Words from `rng` joined by spaces, exactly `len` bytes, not ending in a space.
fn filler(rng: &mut Rng, len: usize) -> String {
    let mut s = String::with_capacity(len + 16);
    while s.len() < len {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(rng.pick(&WORDS));
    }
    s.truncate(len);
    if s.ends_with(' ') {
        s.pop();
        s.push('x');
    }
    s
}

/// The LDIF record of person i (with its trailing blank line).
pub fn person_ldif(p: &GenParams, i: u64) -> String {
    let mut rng = Rng::for_stream(p.seed, i);
    let (given, sn) = draw_names(&mut rng);
    let title = rng.pick(&TITLES);
    let phone = format!("+1 555 {:03} {:04}", rng.below(1000), rng.below(10_000));
    let salt = rng.next_u64().to_be_bytes();
    let mut s = String::with_capacity(p.entry_size + 64);
    s.push_str(&format!(
        "dn: {}\nobjectClass: top\nobjectClass: person\nobjectClass: organizationalPerson\n\
         objectClass: inetOrgPerson\nuid: {}\ncn: {given} {sn}\nsn: {sn}\ngivenName: {given}\n\
         mail: {}\ntelephoneNumber: {phone}\ntitle: {title}\n",
        user_dn(i, &p.suffix),
        uid(i),
        mail(i),
    ));
    if p.passwords {
        s.push_str(&format!(
            "userPassword: {}\n",
            ssha(password(i).as_bytes(), &salt)
        ));
    }
    // What is left of the size budget goes to description values; there is always at least one.
    let mut left = p.entry_size.saturating_sub(s.len() + 1);
    let mut part = 1;
    loop {
        let head = format!("description: {title} {part}: ");
        let room = left.saturating_sub(head.len() + 1);
        let take = room.clamp(8, DESCRIPTION_CHUNK);
        s.push_str(&head);
        s.push_str(&filler(&mut rng, take));
        s.push('\n');
        left = left.saturating_sub(head.len() + take + 1);
        part += 1;
        if left < 40 {
            break;
        }
    }
    s.push('\n');
    s
}

/// The suffix entry and the ten units. The suffix's first RDN must be `dc=` or `o=`.
pub fn header_ldif(suffix: &str) -> io::Result<String> {
    let first = suffix.split(',').next().unwrap_or("");
    let (attr, value) = first.split_once('=').unwrap_or(("", ""));
    let value = value.trim();
    let mut s = match attr.trim().to_ascii_lowercase().as_str() {
        "dc" => format!(
            "dn: {suffix}\nobjectClass: top\nobjectClass: dcObject\nobjectClass: organization\n\
             dc: {value}\no: {value}\n\n"
        ),
        "o" => format!("dn: {suffix}\nobjectClass: top\nobjectClass: organization\no: {value}\n\n"),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("suffix {suffix:?}: its first RDN must be dc=... or o=..."),
            ))
        }
    };
    for ou in OUS {
        s.push_str(&format!(
            "dn: ou={ou},{suffix}\nobjectClass: top\nobjectClass: organizationalUnit\nou: {ou}\n\n"
        ));
    }
    Ok(s)
}

/// Writes the whole data set.
pub fn write_ldif(p: &GenParams, out: &mut impl Write) -> io::Result<()> {
    out.write_all(header_ldif(&p.suffix)?.as_bytes())?;
    for i in 0..p.entries {
        out.write_all(person_ldif(p, i).as_bytes())?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::{LdifReader, LdifRecord};

    fn params(entries: u64, entry_size: usize, passwords: bool) -> GenParams {
        GenParams {
            entries,
            seed: 42,
            entry_size,
            suffix: "dc=example,dc=com".into(),
            passwords,
        }
    }

    fn generate(p: &GenParams) -> Vec<u8> {
        let mut out = Vec::new();
        write_ldif(p, &mut out).unwrap();
        out
    }

    #[test]
    fn deterministic_for_the_same_arguments() {
        let p = params(200, 500, true);
        assert_eq!(generate(&p), generate(&p));
        let other = GenParams {
            seed: 43,
            ..p.clone()
        };
        assert_ne!(generate(&p), generate(&other));
    }

    #[test]
    fn entries_are_about_the_requested_size() {
        for (size, passwords) in [(500, false), (500, true), (5000, false), (5000, true)] {
            let p = params(100, size, passwords);
            for i in [0u64, 1, 57, 99] {
                let len = person_ldif(&p, i).len();
                let diff = len.abs_diff(size);
                assert!(diff * 10 <= size, "size {size}: entry {i} has {len} bytes");
            }
        }
    }

    #[test]
    fn parses_as_ldif_with_expected_names() {
        let p = params(25, 500, true);
        let data = generate(&p);
        let records: Vec<LdifRecord> = LdifReader::new(&data[..]).map(|r| r.unwrap()).collect();
        assert_eq!(records.len(), 1 + 10 + 25);
        let LdifRecord::Content { dn, attrs } = &records[11 + 13] else {
            panic!("not a content record")
        };
        assert_eq!(
            String::from_utf8_lossy(dn),
            "uid=user0000013,ou=Legal,dc=example,dc=com"
        );
        let get = |name: &str| -> Vec<String> {
            attrs
                .iter()
                .filter(|(a, _)| a.eq_ignore_ascii_case(name))
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .collect()
        };
        let (given, sn) = person_names(42, 13);
        assert_eq!(get("cn"), vec![format!("{given} {sn}")]);
        assert_eq!(get("sn"), vec![sn]);
        assert_eq!(get("mail"), vec!["user0000013@example.com".to_string()]);
        let pw = get("userPassword");
        assert_eq!(pw.len(), 1);
        assert!(canopy_password::verify(pw[0].as_bytes(), b"pw-user0000013").unwrap());
        assert!(!canopy_password::verify(pw[0].as_bytes(), b"pw-user0000012").unwrap());
        let desc = get("description");
        let mut unique = desc.clone();
        unique.dedup();
        assert_eq!(desc.len(), unique.len());
    }

    #[test]
    fn large_entries_have_several_description_values() {
        let p = params(1, 5000, false);
        let n = person_ldif(&p, 0).matches("\ndescription: ").count();
        assert!(n >= 20, "{n}");
    }

    #[test]
    fn suffix_forms() {
        assert!(header_ldif("o=acme").unwrap().contains("o: acme\n"));
        assert!(header_ldif("dc=example,dc=com")
            .unwrap()
            .contains("dc: example\n"));
        assert!(header_ldif("cn=nope").is_err());
        assert!(header_ldif("").is_err());
    }

    #[test]
    fn surnames_are_varied() {
        let mut names: Vec<String> = (0..2000).map(|i| person_names(42, i).1).collect();
        names.sort();
        names.dedup();
        assert!(names.len() > 1800, "{}", names.len());
    }
}
