//! Operational attributes a server keeps on every entry: timestamps, CSNs, entryUUID, creators and modifiers.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use canopy_core::{Attribute, Entry};
use canopy_proto::{Change, ModifyOperation};

/// The time and change sequence number of one write, taken once so every attribute agrees.
#[derive(Debug, Clone)]
pub struct Stamp {
    /// Generalized time, `YYYYMMDDHHMMSSZ`.
    pub time: String,
    /// OpenLDAP-format CSN: `YYYYMMDDHHMMSS.uuuuuuZ#counter#sid#mod`.
    pub csn: String,
}

static LAST: Mutex<(u128, u32)> = Mutex::new((0, 0));

/// Appends `value` in `radix` (10 or 16, lower-case hex digits), zero-padded to at least `width`.
fn push_digits(out: &mut String, value: u64, width: usize, radix: u64) {
    let mut digits = [b'0'; 20];
    let (mut rest, mut len) = (value, 0);
    while rest > 0 && len < digits.len() {
        digits[len] = b"0123456789abcdef"[(rest % radix) as usize];
        rest /= radix;
        len += 1;
    }
    for &digit in digits.iter().take(len.max(width)).rev() {
        out.push(char::from(digit));
    }
}

impl Stamp {
    /// A stamp of server ID 0 (slapd's default `serverID`).
    pub fn now() -> Stamp {
        Stamp::now_for(0)
    }

    /// A stamp whose CSN carries server ID `sid` (0–4095; higher values are cut to 12 bits). CSNs of one
    /// process ascend strictly whatever the server ID: the same microsecond gets a higher counter.
    pub fn now_for(sid: u16) -> Stamp {
        let sid = sid & 0xfff;
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0);
        // CSNs must grow strictly: the same microsecond gets a higher counter.
        let (micros, counter) = {
            let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
            if micros > last.0 {
                *last = (micros, 0);
            } else {
                last.1 += 1;
            }
            *last
        };
        let secs = (micros / 1_000_000) as i64;
        let frac = (micros % 1_000_000) as u32;
        let (y, mo, d, h, mi, s) = civil(secs);
        // Written digit by digit: every write takes a stamp on the writer thread, where `format!`
        // cost more than the rest of the stamp.
        let mut time = String::with_capacity(15);
        for (value, width) in [(y as u64, 4), (mo as u64, 2), (d as u64, 2), (h as u64, 2)] {
            push_digits(&mut time, value, width, 10);
        }
        push_digits(&mut time, mi as u64, 2, 10);
        push_digits(&mut time, s as u64, 2, 10);
        let mut csn = String::with_capacity(40);
        csn.push_str(&time);
        csn.push('.');
        push_digits(&mut csn, u64::from(frac), 6, 10);
        csn.push_str("Z#");
        push_digits(&mut csn, u64::from(counter), 6, 16);
        csn.push('#');
        push_digits(&mut csn, u64::from(sid), 3, 16);
        csn.push_str("#000000");
        time.push('Z');
        Stamp { time, csn }
    }

    /// Sets modifiersName, modifyTimestamp and entryCSN for a modification by `modifier` (a DN).
    pub fn touch(&self, entry: &mut Entry, modifier: &str) {
        self.touch_unless_written(entry, modifier, &[]);
    }

    /// [`Stamp::touch`], keeping modifiersName and modifyTimestamp where `changes` write them (a
    /// modify under the Relax Rules control; slapd's `slap_mods_opattrs` keeps them too).
    pub fn touch_unless_written(&self, entry: &mut Entry, modifier: &str, changes: &[Change]) {
        let written = |name: &str| {
            changes.iter().any(|c| {
                c.modification.name.eq_ignore_ascii_case(name)
                    && matches!(c.operation, ModifyOperation::Add | ModifyOperation::Replace)
                    && !c.modification.values.is_empty()
            })
        };
        // As slapd's modify replaces them after the client's changes: each moves to the end of the
        // entry (a replace is a delete and an add), entryCSN, modifiersName, modifyTimestamp.
        set_last(entry, "entryCSN", self.csn.as_bytes().to_vec());
        if !written("modifiersName") {
            set_last(entry, "modifiersName", modifier.as_bytes().to_vec());
        }
        if !written("modifyTimestamp") {
            set_last(entry, "modifyTimestamp", self.time.as_bytes().to_vec());
        }
    }

    /// Sets every operational attribute of a new entry created by `creator` (keeping any an import
    /// supplied): [`Stamp::identify`] and [`Stamp::fill`].
    pub fn create(&self, entry: &mut Entry, creator: &str, structural: &str) {
        Stamp::identify(entry, creator, structural);
        self.fill(entry);
    }

    /// The operational attributes of a new entry that do not depend on the time: entryUUID, creatorsName,
    /// modifiersName (kept when supplied) and structuralObjectClass.
    pub fn identify(entry: &mut Entry, creator: &str, structural: &str) {
        if entry.get("entryUUID").is_none() {
            set(
                entry,
                "entryUUID",
                uuid::Uuid::new_v4().hyphenated().to_string().into_bytes(),
            );
        }
        for name in ["creatorsName", "modifiersName"] {
            if entry.get(name).is_none() {
                set(entry, name, creator.as_bytes().to_vec());
            }
        }
        set(
            entry,
            "structuralObjectClass",
            structural.as_bytes().to_vec(),
        );
    }

    /// createTimestamp, modifyTimestamp and entryCSN of a new entry from this stamp, unless supplied.
    pub fn fill(&self, entry: &mut Entry) {
        for (name, value) in [
            ("createTimestamp", &self.time),
            ("modifyTimestamp", &self.time),
            ("entryCSN", &self.csn),
        ] {
            if entry.get(name).is_none() {
                set(entry, name, value.as_bytes().to_vec());
            }
        }
    }
}

fn set(entry: &mut Entry, desc: &str, value: Vec<u8>) {
    match entry.get_mut(desc) {
        Some(attr) => attr.values = vec![value],
        None => entry.attrs.push(Attribute {
            desc: desc.to_string(),
            values: vec![value],
        }),
    }
}

/// Replaces `desc` by the one value `value` at the end of the entry, where slapd's replace leaves it.
fn set_last(entry: &mut Entry, desc: &str, value: Vec<u8>) {
    let at = entry
        .attrs
        .iter()
        .position(|a| a.desc.eq_ignore_ascii_case(desc));
    let mut attr = match at {
        Some(i) => entry.attrs.remove(i),
        None => Attribute {
            desc: desc.to_string(),
            values: Vec::new(),
        },
    };
    attr.values = vec![value];
    entry.attrs.push(attr);
}

/// Seconds since the epoch to (year, month, day, hour, minute, second) in UTC (proleptic Gregorian).
pub fn civil(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_as_format_writes_them() {
        for value in [
            0u64, 7, 10, 255, 4095, 65_535, 999_999, 1_000_000, 20_261_129,
        ] {
            for width in [2, 3, 4, 6] {
                let (mut dec, mut hex) = (String::new(), String::new());
                push_digits(&mut dec, value, width, 10);
                push_digits(&mut hex, value, width, 16);
                assert_eq!(dec, format!("{value:0width$}"));
                assert_eq!(hex, format!("{value:0width$x}"));
            }
        }
        let stamp = Stamp::now_for(0x1ab);
        assert_eq!(stamp.time.len(), 15, "{}", stamp.time);
        assert_eq!(stamp.csn.len(), 40, "{}", stamp.csn);
        assert!(
            canopy_proto::sync::Csn::parse(&stamp.csn).is_some(),
            "{}",
            stamp.csn
        );
        assert!(stamp.csn.starts_with(&stamp.time[..14]));
        assert!(stamp.csn.ends_with("#1ab#000000"), "{}", stamp.csn);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil(1_795_261_543), (2026, 11, 21, 11, 45, 43));
    }

    #[test]
    fn csns_grow() {
        let a = Stamp::now().csn;
        let b = Stamp::now().csn;
        assert!(b > a, "{a} {b}");
    }

    #[test]
    fn csns_carry_the_server_id() {
        let csn = Stamp::now_for(0x2a).csn;
        let parsed = canopy_proto::sync::Csn::parse(&csn).expect(&csn);
        assert_eq!(parsed.sid(), 0x2a);
        assert!(csn.contains("#02a#"), "{csn}");
    }
}
