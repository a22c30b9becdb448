pub(crate) fn hex(b: &[u8]) -> String { b.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ") }
pub(crate) fn unhex(s: &str) -> Vec<u8> { let s: String = s.split_whitespace().collect(); (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect() }
