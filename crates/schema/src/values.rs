//! Normalizers for the value syntaxes of the matching rules: strings, numbers, times, bit strings,
//! OIDs, UUIDs and CSNs.

use crate::error::InvalidValue;
use crate::prep::{prepare, Fold, Spaces};
use std::cmp::Ordering;

fn utf8(value: &[u8]) -> Result<&str, InvalidValue> {
    std::str::from_utf8(value).map_err(|_| InvalidValue::new("value is not valid UTF-8"))
}

/// Directory String (RFC 4517 §3.3.6): non-empty UTF-8.
pub(crate) fn directory_string(value: &[u8], fold: Fold) -> Result<Vec<u8>, InvalidValue> {
    let s = utf8(value)?;
    if s.is_empty() {
        return Err(InvalidValue::new("empty directory string"));
    }
    Ok(prepare(s, fold, Spaces::Trim).into_bytes())
}

/// IA5 String (RFC 4517 §3.3.15): ASCII only.
pub(crate) fn ia5(value: &[u8], fold: Fold) -> Result<Vec<u8>, InvalidValue> {
    if !value.is_ascii() {
        return Err(InvalidValue::new("value is not an IA5 string"));
    }
    let s = utf8(value)?;
    Ok(prepare(s, fold, Spaces::Trim).into_bytes())
}

/// Postal Address (RFC 4517 §3.3.28) under caseIgnoreListMatch: each `$`-separated line prepared on
/// its own.
pub(crate) fn postal_address(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let s = utf8(value)?;
    if s.is_empty() {
        return Err(InvalidValue::new("empty postal address"));
    }
    let lines: Vec<String> = s
        .split('$')
        .map(|line| prepare(line, Fold::Unicode, Spaces::Trim))
        .collect();
    Ok(lines.join("$").into_bytes())
}

/// Numeric String (RFC 4517 §3.3.23): digits and spaces; spaces are insignificant.
pub(crate) fn numeric_string(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    if value.is_empty() || !value.iter().all(|b| b.is_ascii_digit() || *b == b' ') {
        return Err(InvalidValue::new("not a numeric string"));
    }
    Ok(value.iter().copied().filter(|b| *b != b' ').collect())
}

/// PrintableString characters (RFC 4517 §3.2).
pub(crate) fn is_printable(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"'()+,-./:? =".contains(&b)
}

/// Telephone Number (RFC 4517 §3.3.31) under telephoneNumberMatch: spaces and hyphens removed, case
/// ignored. Like OpenLDAP, any printable string is accepted rather than only E.123 forms.
pub(crate) fn telephone(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    if value.is_empty() || !value.iter().all(|b| is_printable(*b)) {
        return Err(InvalidValue::new("not a telephone number"));
    }
    let out: Vec<u8> = value
        .iter()
        .filter(|b| **b != b' ' && **b != b'-')
        .map(u8::to_ascii_lowercase)
        .collect();
    if out.is_empty() {
        return Err(InvalidValue::new("telephone number has no digits"));
    }
    Ok(out)
}

/// INTEGER (RFC 4517 §3.3.16): `-`? digits, no leading zeros, no "-0".
pub(crate) fn integer(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    let valid = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits.first() != Some(&b'0'))
        && !(digits == b"0" && digits.len() != value.len());
    if !valid {
        return Err(InvalidValue::new("not an integer"));
    }
    Ok(value.to_vec())
}

/// Operand of the bitwise rules: an INTEGER that fits 64 bits, the width OpenLDAP and Active
/// Directory give these rules. Negative values stand for their two's complement bits.
pub(crate) fn bit_mask(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let norm = integer(value)?;
    if parse_bit_mask(&norm).is_none() {
        return Err(InvalidValue::new(
            "integer out of the 64-bit range of bitwise matching",
        ));
    }
    Ok(norm)
}

pub(crate) fn parse_bit_mask(norm: &[u8]) -> Option<i64> {
    std::str::from_utf8(norm).ok()?.parse().ok()
}

/// Orders normalized integers numerically.
pub(crate) fn compare_integers(a: &[u8], b: &[u8]) -> Ordering {
    let (a_neg, a_digits) = match a.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, a),
    };
    let (b_neg, b_digits) = match b.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, b),
    };
    let magnitude = a_digits
        .len()
        .cmp(&b_digits.len())
        .then_with(|| a_digits.cmp(b_digits));
    match (a_neg, b_neg) {
        (false, false) => magnitude,
        (true, true) => magnitude.reverse(),
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
    }
}

/// The first component of a `( first ... )` description, or the whole value when it is not one.
pub(crate) fn first_component(value: &[u8]) -> &[u8] {
    let trimmed = value.trim_ascii();
    match trimmed.strip_prefix(b"(") {
        Some(rest) => {
            let rest = rest.trim_ascii_start();
            let end = rest
                .iter()
                .position(|b| b.is_ascii_whitespace() || *b == b')')
                .unwrap_or(rest.len());
            rest.get(..end).unwrap_or_default()
        }
        None => trimmed,
    }
}

/// Boolean (RFC 4517 §3.3.3): exactly "TRUE" or "FALSE".
pub(crate) fn boolean(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    match value {
        b"TRUE" | b"FALSE" => Ok(value.to_vec()),
        _ => Err(InvalidValue::new("not TRUE or FALSE")),
    }
}

/// Bit String (RFC 4517 §3.3.2): `'0101'B`.
pub(crate) fn bit_string(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let valid = value
        .strip_prefix(b"'")
        .and_then(|v| v.strip_suffix(b"'B"))
        .is_some_and(|bits| bits.iter().all(|b| *b == b'0' || *b == b'1'));
    if !valid {
        return Err(InvalidValue::new("not a bit string"));
    }
    Ok(value.to_vec())
}

/// numericoid per RFC 4512 §1.4: numbers without leading zeros separated by single dots.
pub(crate) fn is_numeric_oid(s: &str) -> bool {
    let mut count = 0;
    for arc in s.split('.') {
        let ok = !arc.is_empty()
            && arc.bytes().all(|b| b.is_ascii_digit())
            && (arc == "0" || !arc.starts_with('0'));
        if !ok {
            return false;
        }
        count += 1;
    }
    count >= 2
}

/// descr (keystring) per RFC 4512 §1.4: a letter, then letters, digits and hyphens.
pub(crate) fn is_descr(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// OID syntax (RFC 4517 §3.3.26) without a schema: numeric OIDs as they are, names lower-cased.
/// No spaces are allowed around it: slapd answers `(objectClass= person)` Undefined.
pub(crate) fn oid(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let s = utf8(value)?;
    if is_numeric_oid(s) {
        Ok(s.as_bytes().to_vec())
    } else if is_descr(s) {
        Ok(s.to_ascii_lowercase().into_bytes())
    } else {
        Err(InvalidValue::new("not an OID or descriptor"))
    }
}

/// Name and Optional UID (RFC 4517 §3.3.21): a DN, optionally `#'bits'B`.
pub(crate) fn unique_member(
    value: &[u8],
    normalize_dn: impl Fn(&[u8]) -> Result<Vec<u8>, InvalidValue>,
) -> Result<Vec<u8>, InvalidValue> {
    let (dn, uid) = split_optional_uid(value);
    let mut out = normalize_dn(dn)?;
    if let Some(uid) = uid {
        out.push(b'#');
        out.extend(bit_string(uid)?);
    }
    Ok(out)
}

/// Splits a trailing `#'bits'B` from a Name and Optional UID value. A `#` inside the DN is escaped,
/// so only a final unescaped `#` followed by a bit string separates the UID.
pub(crate) fn split_optional_uid(value: &[u8]) -> (&[u8], Option<&[u8]>) {
    if let Some(pos) = value.iter().rposition(|b| *b == b'#') {
        let escaped = pos > 0 && value.get(pos - 1) == Some(&b'\\');
        let tail = value.get(pos + 1..).unwrap_or_default();
        if !escaped && tail.starts_with(b"'") && tail.ends_with(b"'B") {
            return (value.get(..pos).unwrap_or_default(), Some(tail));
        }
    }
    (value, None)
}

/// UUID (RFC 4530): 8-4-4-4-12 hex digits; normal form lower case.
pub(crate) fn uuid(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let valid = value.len() == 36
        && value.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    if !valid {
        return Err(InvalidValue::new("not a UUID"));
    }
    Ok(value.to_ascii_lowercase())
}

/// CSN (OpenLDAP): `YYYYmmddHHMMSS.ffffffZ#count#sid#mod`, matched as octets.
pub(crate) fn csn(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let mut parts = value.split(|b| *b == b'#');
    let time_ok = parts.next().is_some_and(|t| match zulu_time_valid(t) {
        Some(valid) => valid,
        None => generalized_time(t).is_ok() && t.ends_with(b"Z"),
    });
    let mut count = 0;
    let mut hex_ok = true;
    for part in parts {
        count += 1;
        hex_ok &= !part.is_empty() && part.iter().all(u8::is_ascii_hexdigit);
    }
    let hex_ok = hex_ok && count == 3;
    if !(time_ok && hex_ok) {
        return Err(InvalidValue::new("not a CSN"));
    }
    Ok(value.to_vec())
}

/// Whether `t`, a generalized time of the form every CSN has (`YYYYMMDDHHMMSS`, a fraction or none,
/// `Z`), is valid, without building its normal form: what [`generalized_time`] accepts of that form.
/// None for any other form, which [`generalized_time`] decides.
fn zulu_time_valid(t: &[u8]) -> Option<bool> {
    let body = t.strip_suffix(b"Z")?;
    let (whole, fraction) = match body.get(14) {
        None => (body, None),
        Some(b'.' | b',') => (body.get(..14)?, body.get(15..)),
        Some(_) => return None,
    };
    if whole.len() != 14 || !whole.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if fraction.is_some_and(|f| f.is_empty() || !f.iter().all(u8::is_ascii_digit)) {
        return None;
    }
    let field = |from: usize, len: usize| digits(whole, from, len).unwrap_or(u32::MAX);
    let (year, month, day) = (field(0, 4), field(4, 2), field(6, 2));
    let (hour, minute, second) = (field(8, 2), field(10, 2), field(12, 2));
    let date_ok =
        (1..=12).contains(&month) && day >= 1 && day <= days_in_month(i64::from(year), month);
    Some(date_ok && hour <= 23 && minute <= 59 && second <= 60)
}

fn digits(s: &[u8], from: usize, len: usize) -> Option<u32> {
    let part = s.get(from..from + len)?;
    if !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    part.iter()
        .try_fold(0u32, |acc, d| Some(acc * 10 + u32::from(d - b'0')))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Generalized Time (RFC 4517 §3.3.13) normalized to UTC as `YYYYmmddHHMMSS[.fraction]Z`, the
/// fraction without trailing zeros. A fraction of an hour or minute becomes minutes and seconds.
pub(crate) fn generalized_time(value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
    let bad = || InvalidValue::new("not a generalized time");
    let year = digits(value, 0, 4).ok_or_else(bad)?;
    let month = digits(value, 4, 2).ok_or_else(bad)?;
    let day = digits(value, 6, 2).ok_or_else(bad)?;
    let hour = digits(value, 8, 2).ok_or_else(bad)?;
    let mut pos = 10;
    let minute = digits(value, pos, 2);
    if minute.is_some() {
        pos += 2;
    }
    let second = if minute.is_some() {
        digits(value, pos, 2)
    } else {
        None
    };
    if second.is_some() {
        pos += 2;
    }
    let mut fraction: Vec<u8> = Vec::new();
    if matches!(value.get(pos), Some(b'.') | Some(b',')) {
        pos += 1;
        let start = pos;
        while value.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        fraction = value.get(start..pos).unwrap_or_default().to_vec();
        if fraction.is_empty() {
            return Err(bad());
        }
    }
    let offset_minutes: i64 = match value.get(pos) {
        Some(b'Z') if pos + 1 == value.len() => 0,
        Some(sign @ (b'+' | b'-')) => {
            let hh = digits(value, pos + 1, 2).ok_or_else(bad)?;
            let mm = match value.len() - pos {
                3 => 0,
                5 => digits(value, pos + 3, 2).ok_or_else(bad)?,
                _ => return Err(bad()),
            };
            if hh > 23 || mm > 59 {
                return Err(bad());
            }
            let total = i64::from(hh * 60 + mm);
            if *sign == b'-' {
                -total
            } else {
                total
            }
        }
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(i64::from(year), month)
        || hour > 23
        || minute.is_some_and(|m| m > 59)
        || second.is_some_and(|s| s > 60)
    {
        return Err(bad());
    }
    // A fraction belongs to the last field given and is spread over the omitted ones.
    let unit_seconds: u64 = match (minute, second) {
        (None, _) => 3600,
        (Some(_), None) => 60,
        (Some(_), Some(_)) => 1,
    };
    let (mut minute, mut second) = (minute.unwrap_or(0), second.unwrap_or(0));
    let mut sub_second: Vec<u8> = fraction.clone();
    if unit_seconds > 1 && !fraction.is_empty() {
        let frac_digits = fraction.get(..fraction.len().min(18)).unwrap_or_default();
        let scale = 10u128.pow(frac_digits.len() as u32);
        let numer = frac_digits
            .iter()
            .fold(0u128, |acc, d| acc * 10 + u128::from(d - b'0'));
        let nanos_total = numer * u128::from(unit_seconds) * 1_000_000_000 / scale;
        let whole_seconds = (nanos_total / 1_000_000_000) as u64;
        let nanos = (nanos_total % 1_000_000_000) as u64;
        minute += (whole_seconds / 60) as u32;
        second += (whole_seconds % 60) as u32;
        sub_second = format!("{nanos:09}").into_bytes();
    }
    while sub_second.last() == Some(&b'0') {
        sub_second.pop();
    }
    let days = days_from_civil(i64::from(year), month, day);
    let total_minutes = days * 1440 + i64::from(hour) * 60 + i64::from(minute) - offset_minutes;
    let (y, mo, d) = civil_from_days(total_minutes.div_euclid(1440));
    let minute_of_day = total_minutes.rem_euclid(1440);
    if !(0..=9999).contains(&y) {
        return Err(bad());
    }
    let mut out = format!(
        "{y:04}{mo:02}{d:02}{:02}{:02}{second:02}",
        minute_of_day / 60,
        minute_of_day % 60
    )
    .into_bytes();
    if !sub_second.is_empty() {
        out.push(b'.');
        out.extend(sub_second);
    }
    out.push(b'Z');
    Ok(out)
}

/// Orders normalized generalized times: the 14 digits, then the fraction as a decimal.
pub(crate) fn compare_times(a: &[u8], b: &[u8]) -> Ordering {
    fn split(v: &[u8]) -> (&[u8], &[u8]) {
        let body = v.strip_suffix(b"Z").unwrap_or(v);
        match body.iter().position(|c| *c == b'.') {
            Some(dot) => (
                body.get(..dot).unwrap_or_default(),
                body.get(dot + 1..).unwrap_or_default(),
            ),
            None => (body, b""),
        }
    }
    let (a_whole, a_frac) = split(a);
    let (b_whole, b_frac) = split(b);
    a_whole.cmp(b_whole).then_with(|| a_frac.cmp(b_frac))
}

#[cfg(test)]
mod zulu_tests {
    use super::{csn, generalized_time, zulu_time_valid};

    /// The CSN shortcut decides every time of its form as the full normalization does.
    #[test]
    fn zulu_shortcut_agrees_with_generalized_time() {
        let times: &[&[u8]] = &[
            b"20261129071600.123456Z",
            b"20261129071600Z",
            b"20261129071600,5Z",
            b"20240229000000.000000Z",
            b"20230229000000.000000Z",
            b"20261329071600.123456Z",
            b"20261100071600.123456Z",
            b"20261129241600.123456Z",
            b"20261129076000.123456Z",
            b"20261129071660.123456Z",
            b"20261129071661.123456Z",
            b"20261129071600.Z",
            b"20261129071600.12a456Z",
            b"2026112907160a.123456Z",
            b"00000101000000Z",
        ];
        let mut decided = 0;
        for t in times {
            let full = generalized_time(t).is_ok();
            if let Some(valid) = zulu_time_valid(t) {
                assert_eq!(valid, full, "{}", String::from_utf8_lossy(t));
                decided += 1;
            }
        }
        // All but the three with a malformed fraction or digit.
        assert_eq!(decided, times.len() - 3);
        // Other forms are left to the full normalization.
        for t in [
            &b"202611290716Z"[..],
            b"20261129071600+0100",
            b"2026112907Z",
            b"",
        ] {
            assert_eq!(zulu_time_valid(t), None);
        }
        assert!(csn(b"20261129071600.123456Z#000000#000#000000").is_ok());
        assert!(csn(b"20261129071600.123456Z#000000#000").is_err());
        assert!(csn(b"20261129071600.123456Z#000000#000#000000#0").is_err());
        assert!(csn(b"20261129071600.123456Z#000000##000000").is_err());
        assert!(csn(b"20261329071600.123456Z#000000#000#000000").is_err());
        assert!(csn(b"202611290716Z#000000#000#000000").is_ok());
    }
}
