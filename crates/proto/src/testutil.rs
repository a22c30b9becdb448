//! Test helpers shared by the crate's tests: hex dumps and a deterministic random generator.

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Deterministic xorshift generator, so failures reproduce without a property-testing crate.
pub(crate) struct Gen(u64);

impl Gen {
    pub(crate) fn new(seed: u64) -> Gen {
        Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    /// Arbitrary bytes, occasionally long enough to need multi-octet BER lengths.
    pub(crate) fn bytes(&mut self) -> Vec<u8> {
        let len = match self.below(10) {
            0 => 0,
            1 => 128 + self.below(300),
            _ => 1 + self.below(12),
        };
        (0..len).map(|_| self.next() as u8).collect()
    }
    /// Non-empty bytes drawn from text, specials and binary.
    pub(crate) fn value(&mut self) -> Vec<u8> {
        const POOL: &[&[u8]] = &[
            b"a",
            b"Z",
            b"0",
            b" ",
            b"*",
            b"(",
            b")",
            b"\\",
            b"\0",
            b"#",
            b",",
            b"+",
            "é".as_bytes(),
            b"\xff",
            b"\xc3",
            b"=",
        ];
        (0..1 + self.below(6))
            .flat_map(|_| POOL[self.below(POOL.len())].to_vec())
            .collect()
    }
    pub(crate) fn attr(&mut self) -> String {
        const NAMES: &[&str] = &[
            "cn",
            "sn",
            "objectClass",
            "mail",
            "2.5.4.3",
            "cn;lang-en",
            "x-my-Attr",
            "uid;binary;x",
        ];
        NAMES[self.below(NAMES.len())].to_owned()
    }
    pub(crate) fn text(&mut self) -> String {
        const WORDS: &[&str] = &[
            "",
            "ok",
            "dc=example,dc=com",
            "ldap://h/o=x??sub",
            "Jürgen",
            "1.3.6.1.4.1.4203.1.11.1",
        ];
        WORDS[self.below(WORDS.len())].to_owned()
    }
}
