//! Generalized time as the password policy state keeps it: whole seconds (`pwdChangedTime`,
//! `pwdAccountLockedTime`) or microseconds (`pwdFailureTime`, `pwdGraceUseTime`), always UTC.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::opattrs::civil;

/// Microseconds since the epoch: the clock every policy decision reads, passed in so tests can move it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant(pub i64);

impl Instant {
    pub fn now() -> Instant {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0);
        Instant(micros)
    }

    pub fn from_secs(secs: i64) -> Instant {
        Instant(secs.saturating_mul(1_000_000))
    }

    /// Whole seconds (rounded down).
    pub fn secs(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }

    /// This instant plus `secs` seconds.
    pub fn plus(self, secs: i64) -> Instant {
        Instant(self.0.saturating_add(secs.saturating_mul(1_000_000)))
    }

    /// `YYYYmmddHHMMSSZ`.
    pub fn generalized(self) -> String {
        let (y, mo, d, h, mi, s) = civil(self.secs());
        format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z")
    }

    /// `YYYYmmddHHMMSS.uuuuuuZ`, as slapd 2.5 records failures and grace logins.
    pub fn generalized_micros(self) -> String {
        let (y, mo, d, h, mi, s) = civil(self.secs());
        let frac = self.0.rem_euclid(1_000_000);
        format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}.{frac:06}Z")
    }

    /// Parses `YYYYmmddHH[MM[SS]][(.|,)fraction]Z`; None for anything else (offsets included: the
    /// policy state is always written in UTC).
    pub fn parse(text: &[u8]) -> Option<Instant> {
        let text = text.strip_suffix(b"Z")?;
        let (whole, frac) = match text.iter().position(|&b| b == b'.' || b == b',') {
            Some(i) => (&text[..i], &text[i + 1..]),
            None => (text, &b""[..]),
        };
        if !whole.iter().all(u8::is_ascii_digit) || !frac.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let num = |range: std::ops::Range<usize>| -> Option<i64> {
            std::str::from_utf8(whole.get(range)?).ok()?.parse().ok()
        };
        let (year, month, day, hour) = (num(0..4)?, num(4..6)?, num(6..8)?, num(8..10)?);
        let (minute, second) = match whole.len() {
            10 => (0, 0),
            12 => (num(10..12)?, 0),
            14 => (num(10..12)?, num(12..14)?),
            _ => return None,
        };
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
            return None;
        }
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(60);
        let mut micros = 0i64;
        for (i, digit) in frac.iter().take(6).enumerate() {
            micros += i64::from(digit - b'0') * 10i64.pow(5 - i as u32);
        }
        Some(Instant(secs * 1_000_000 + micros))
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let cases: [(&str, i64); 4] = [
            ("19700101000000Z", 0),
            ("20261125025055.738925Z", 1_795_575_055_738_925),
            ("2026112502Z", 1_795_572_000_000_000),
            ("20000229120000,5Z", 951_825_600_500_000),
        ];
        for (text, micros) in cases {
            assert_eq!(
                Instant::parse(text.as_bytes()),
                Some(Instant(micros)),
                "{text}"
            );
        }
        let t = Instant(1_795_575_055_738_925);
        assert_eq!(t.generalized(), "20261125025055Z");
        assert_eq!(t.generalized_micros(), "20261125025055.738925Z");
        assert_eq!(Instant::parse(t.generalized_micros().as_bytes()), Some(t));
    }

    #[test]
    fn refuses_other_forms() {
        for text in [
            "",
            "Z",
            "20261325000000Z",
            "20261125025055+0100",
            "2026112502505Z",
            "x0261125025055Z",
        ] {
            assert_eq!(Instant::parse(text.as_bytes()), None, "{text}");
        }
    }
}
