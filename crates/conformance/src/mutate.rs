//! Value mutations for random assertions: spellings that string preparation (RFC 4518), integer,
//! telephone-number and DN matching must see through, and spellings they must not; plus
//! assertions on operational attributes, whose values are not in the data files.

use crate::data::Pool;
use crate::rng::Rng;

/// Turns a value from the data into a nearby assertion value (often unchanged).
pub fn mutate(rng: &mut Rng, value: Vec<u8>) -> Vec<u8> {
    let Ok(s) = String::from_utf8(value.clone()) else {
        return value;
    };
    let out = match rng.below(120) {
        0..=44 => s,
        45..=52 => s.to_uppercase(),
        53..=58 => s.to_lowercase(),
        59..=63 => s.replacen(' ', "   ", 1),
        64..=67 => format!("  {s} "),
        68..=71 => s.replace(' ', ""),
        72..=74 => s.replace(' ', "-"),
        75..=82 => match s.trim().parse::<i64>() {
            Ok(n) => {
                let d = if rng.chance(50) { 1 } else { -1 };
                n.saturating_add(d).to_string()
            }
            Err(_) => format!("{s}x"),
        },
        83..=88 => "no such value".into(),
        89..=92 => s.chars().take(3).collect(),
        93..=95 => "".into(),
        96..=99 => format!("{s} {s}"),
        // Integers: leading zeros and signs.
        100 | 101 => format!("0{s}"),
        102 => format!("+{s}"),
        // RFC 4518 mappings: no-break space to space, soft hyphen to nothing, full-width
        // letters and decomposed accents by NFKC.
        103 | 104 => s.replace(' ', "\u{a0}"),
        105 => s.chars().flat_map(|c| [c, '\u{ad}']).collect(),
        106 | 107 => s.chars().map(fullwidth).collect(),
        108 | 109 => decompose(&s),
        // DN-valued attributes: spaces after separators, upper-case types.
        110 | 111 => s.replace(',', ", ").replace('=', " = "),
        112 => s
            .replace("uid=", "UID=")
            .replace("ou=", "OU=")
            .replace("dc=", "DC="),
        // Characters that filters must escape.
        113 => format!("{s}*"),
        114 => format!("({s})"),
        115 => format!("{s}\\"),
        116 => s.replace('s', "ß"),
        117 => s.replace("ss", "ß").replace("SS", "ß"),
        _ => s.chars().rev().collect(),
    };
    out.into_bytes()
}

/// The full-width form of an ASCII letter or digit (NFKC maps it back).
fn fullwidth(c: char) -> char {
    if c.is_ascii_alphanumeric() {
        char::from_u32(c as u32 - 0x21 + 0xff01).unwrap_or(c)
    } else {
        c
    }
}

/// Precomposed Latin letters with acute, grave, diaeresis or tilde as base + combining mark.
fn decompose(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let (base, mark) = match c {
            'é' => ('e', '\u{301}'),
            'É' => ('E', '\u{301}'),
            'á' => ('a', '\u{301}'),
            'ú' => ('u', '\u{301}'),
            'ó' => ('o', '\u{301}'),
            'è' => ('e', '\u{300}'),
            'ë' => ('e', '\u{308}'),
            'ä' => ('a', '\u{308}'),
            'ö' => ('o', '\u{308}'),
            'ü' => ('u', '\u{308}'),
            'ñ' => ('n', '\u{303}'),
            'Ñ' => ('N', '\u{303}'),
            other => {
                out.push(other);
                continue;
            }
        };
        out.push(base);
        out.push(mark);
    }
    out
}

/// Time assertions far from the import time (the servers' clocks stamp entries seconds apart).
const TIMES: &[&str] = &[
    "19700101000000Z",
    "20000101000000Z",
    "20991231235959Z",
    "2000010100Z",
    "200001010000Z",
    "20000101000000.123Z",
    "20000101000000+0200",
    "20991231235959-0800",
    "2099123123Z",
    "2000",
    "yesterday",
    "20001301000000Z",
];

/// An assertion on an operational attribute: (attribute, value).
pub fn operational(rng: &mut Rng, pool: &Pool) -> (String, Vec<u8>) {
    let pick_dn = |rng: &mut Rng| {
        rng.pick(&pool.entries)
            .map(|e| e.dn.clone())
            .unwrap_or_default()
    };
    let (attr, value): (&str, Vec<u8>) = match rng.below(10) {
        0 => ("createTimestamp", pick_time(rng)),
        1 => ("modifyTimestamp", pick_time(rng)),
        2 => (
            "hasSubordinates",
            rng.pick(&["TRUE", "FALSE", "true", "yes", ""])
                .unwrap_or(&"TRUE")
                .as_bytes()
                .to_vec(),
        ),
        3 | 4 => {
            let v = pick_dn(rng);
            ("entryDN", mutate(rng, v))
        }
        5 => (
            "structuralObjectClass",
            rng.pick(&[
                "inetOrgPerson",
                "person",
                "organizationalUnit",
                "2.5.6.6",
                "top",
            ])
            .unwrap_or(&"person")
            .as_bytes()
            .to_vec(),
        ),
        6 => {
            let v = crate::case::ROOT_DN.as_bytes().to_vec();
            ("creatorsName", mutate(rng, v))
        }
        7 => ("subschemaSubentry", b"cn=Subschema".to_vec()),
        8 => (
            "entryUUID",
            b"00000000-0000-0000-0000-000000000000".to_vec(),
        ),
        _ => ("numSubordinates", b"1".to_vec()),
    };
    (attr.to_string(), value)
}

fn pick_time(rng: &mut Rng) -> Vec<u8> {
    rng.pick(TIMES)
        .unwrap_or(&"20000101000000Z")
        .as_bytes()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(fullwidth('A'), 'Ａ');
        assert_eq!(fullwidth('7'), '７');
        assert_eq!(fullwidth(' '), ' ');
        assert_eq!(decompose("José Ñ"), "Jose\u{301} N\u{303}");
    }

    #[test]
    fn mutations_are_deterministic_and_varied() {
        let run = |seed| {
            let mut rng = Rng::new(seed);
            (0..300)
                .map(|_| mutate(&mut rng, "José Núñez, 1001".as_bytes().to_vec()))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        let distinct: std::collections::BTreeSet<Vec<u8>> = run(5).into_iter().collect();
        assert!(distinct.len() > 20, "{}", distinct.len());
        // Binary values pass through.
        assert_eq!(mutate(&mut Rng::new(1), vec![0xff, 0]), vec![0xff, 0]);
    }
}
