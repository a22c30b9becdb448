//! The kinds of value overlay options take: strings, attribute names, DNs, result codes.

use canopy_proto::{Dn, ResultCode};

/// A list of strings: a TOML array, or one string.
pub(super) fn strings(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    match value {
        toml::Value::String(s) => Ok(vec![s.clone()]),
        toml::Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("{key}: expected strings"))
            })
            .collect(),
        _ => Err(format!("{key}: expected a string or an array of strings")),
    }
}

/// Attribute names: an array, or one string of names separated by spaces (slapd's form).
pub(super) fn names(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let names: Vec<String> = strings(key, value)?
        .iter()
        .flat_map(|s| s.split_whitespace())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(format!("{key}: name at least one attribute"));
    }
    Ok(names)
}

/// A DN option's value, checked for DN syntax.
pub(super) fn dn(key: &str, value: &toml::Value) -> Result<String, String> {
    let text = string(key, value)?;
    Dn::parse(text.as_bytes()).map_err(|e| format!("{key}: {text:?} is not a DN: {e}"))?;
    Ok(text)
}

pub(super) fn string(key: &str, value: &toml::Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key}: expected a string"))
}

/// A result code by number or by its RFC 4511 name (`constraintViolation`).
pub(super) fn result_code(key: &str, value: &toml::Value) -> Result<ResultCode, String> {
    if let Some(n) = value.as_integer() {
        return u32::try_from(n)
            .ok()
            .map(ResultCode::from_code)
            .filter(|c| !matches!(c, ResultCode::Unknown(_) | ResultCode::Success))
            .ok_or_else(|| format!("{key}: {n} is not an LDAP error code"));
    }
    let name = string(key, value)?;
    (1..=122)
        .map(ResultCode::from_code)
        .find(|c| {
            !matches!(c, ResultCode::Unknown(_)) && format!("{c:?}").eq_ignore_ascii_case(&name)
        })
        .ok_or_else(|| format!("{key}: {name:?} is not an LDAP result code name"))
}
