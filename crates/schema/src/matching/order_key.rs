//! Order-preserving index keys: bytes whose lexicographic order is the ordering rule's order.

use super::MatchingRule;

impl MatchingRule {
    /// Key of a normal form (from `normalize` of this rule) such that comparing keys as bytes orders
    /// them exactly as `compare` orders the normal forms. A prefix of a key therefore still sorts
    /// no later than the key, which is what lets an index cut long keys and stay a superset.
    pub fn ordering_key(self, norm: &[u8]) -> Vec<u8> {
        use MatchingRule::*;
        match self {
            IntegerMatch | IntegerOrderingMatch | IntegerFirstComponentMatch => integer_key(norm),
            GeneralizedTimeMatch | GeneralizedTimeOrderingMatch => {
                norm.iter().copied().filter(u8::is_ascii_digit).collect()
            }
            _ => norm.to_vec(),
        }
    }
}

/// Negative numbers first (0x01), then zero and positives (0x02). Within a sign the digit count
/// decides (inverted for negatives), then the digits (complemented for negatives).
fn integer_key(norm: &[u8]) -> Vec<u8> {
    let (negative, digits) = match norm.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, norm),
    };
    let len = u32::try_from(digits.len()).unwrap_or(u32::MAX);
    let mut key = Vec::with_capacity(digits.len() + 5);
    if negative {
        key.push(0x01);
        key.extend_from_slice(&(u32::MAX - len).to_be_bytes());
        key.extend(digits.iter().map(|d| 0xFF - d));
    } else {
        key.push(0x02);
        key.extend_from_slice(&len.to_be_bytes());
        key.extend_from_slice(digits);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorting by key must equal sorting by `compare`, and keys must be distinct iff values are.
    fn check_order(rule: MatchingRule, values: &[&str]) {
        let norms: Vec<Vec<u8>> = values
            .iter()
            .map(|v| rule.normalize(v.as_bytes()).unwrap())
            .collect();
        for a in &norms {
            for b in &norms {
                assert_eq!(
                    rule.ordering_key(a).cmp(&rule.ordering_key(b)),
                    rule.compare(a, b),
                    "{} vs {}",
                    String::from_utf8_lossy(a),
                    String::from_utf8_lossy(b)
                );
            }
        }
    }

    #[test]
    fn integer_keys_order_like_integers() {
        check_order(
            MatchingRule::IntegerOrderingMatch,
            &[
                "0",
                "1",
                "9",
                "10",
                "99",
                "100",
                "-1",
                "-9",
                "-10",
                "-100",
                "100000000000000000000",
                "-100000000000000000000",
                "99999999999999999999",
                "18446744073709551616",
            ],
        );
    }

    #[test]
    fn time_keys_order_like_times() {
        check_order(
            MatchingRule::GeneralizedTimeOrderingMatch,
            &[
                "20200101120000Z",
                "202001011200Z",
                "2020010112Z",
                "20200101115959.5Z",
                "20200101115959.49Z",
                "20200101115959.4999Z",
                "20200101130000+0100",
                "19991231235959Z",
                "20200101120000.000001Z",
                "2020010112,5Z",
            ],
        );
    }

    #[test]
    fn string_keys_order_like_strings() {
        check_order(
            MatchingRule::CaseIgnoreOrderingMatch,
            &["a", "B", "ab", "  a  b", "\u{E9}", "z", "Z Z"],
        );
        check_order(
            MatchingRule::NumericStringOrderingMatch,
            &["1", "10", "2", "1 0", "0"],
        );
    }
}
