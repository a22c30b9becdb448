//! slapd's sssvlv overlay (slapo-sssvlv(5)) as a [`FrontHook`]: the database answers the server-side
//! sorting (RFC 2891) and virtual list view controls, within its limits. Options (slapd's without the
//! `sssvlv-` prefix): `max` (sorted lists open at once on the server), `maxkeys` (keys in one
//! request), `maxperconn` (sorted lists one connection keeps open). The sorted search itself runs in
//! the search operation (`ops/search/sort.rs`), which asks the database for its [`SortPolicy`].

use std::sync::Arc;

use canopy_proto::sort::{CONTROL_SORT_REQUEST, CONTROL_VLV_REQUEST};

use crate::databases::FrontHook;
use crate::sorting::SortPolicy;

/// slapd's defaults: `sssvlv-max` is half its server threads (16 by default), `sssvlv-maxkeys` 5,
/// `sssvlv-maxperconn` 5.
const DEFAULT_MAX: usize = 8;
const DEFAULT_MAX_KEYS: usize = 5;
const DEFAULT_MAX_PER_CONN: usize = 5;

/// The sssvlv overlay of one database.
pub struct SssvlvHook(pub Arc<SortPolicy>);

impl SssvlvHook {
    /// The overlay from its `[[overlay]]` table's options.
    pub fn from_options(options: &toml::Table) -> Result<SssvlvHook, String> {
        let (mut max, mut max_keys, mut max_per_conn) =
            (DEFAULT_MAX, DEFAULT_MAX_KEYS, DEFAULT_MAX_PER_CONN);
        for (key, value) in options {
            let slot = match key.as_str() {
                "max" => &mut max,
                "maxkeys" => &mut max_keys,
                "maxperconn" => &mut max_per_conn,
                other => {
                    return Err(format!(
                        "unknown option {other:?} (sssvlv takes max, maxkeys, maxperconn)"
                    ))
                }
            };
            *slot = positive(key, value)?;
        }
        Ok(SssvlvHook(Arc::new(SortPolicy::new(
            max,
            max_keys,
            max_per_conn,
        ))))
    }
}

/// A count of at least 1: a TOML integer, or a string of digits (slapd.conf's form).
fn positive(key: &str, value: &toml::Value) -> Result<usize, String> {
    let n = match value {
        toml::Value::Integer(n) => usize::try_from(*n).ok(),
        toml::Value::String(s) => s.trim().parse::<usize>().ok(),
        _ => None,
    };
    n.filter(|n| *n > 0)
        .ok_or_else(|| format!("{key}: expected a positive number, got {value}"))
}

impl FrontHook for SssvlvHook {
    fn serves_control(&self, oid: &str) -> bool {
        matches!(oid, CONTROL_SORT_REQUEST | CONTROL_VLV_REQUEST)
    }

    fn sort_policy(&self) -> Option<&Arc<SortPolicy>> {
        Some(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn options() {
        let hook = SssvlvHook::from_options(&table("")).unwrap();
        assert_eq!(
            (hook.0.max, hook.0.max_keys, hook.0.max_per_conn),
            (8, 5, 5)
        );
        let hook =
            SssvlvHook::from_options(&table("max = 3\nmaxkeys = \"2\"\nmaxperconn = 1")).unwrap();
        assert_eq!(
            (hook.0.max, hook.0.max_keys, hook.0.max_per_conn),
            (3, 2, 1)
        );
        for bad in ["max = 0", "maxkeys = -1", "maxperconn = \"x\"", "other = 1"] {
            assert!(SssvlvHook::from_options(&table(bad)).is_err(), "{bad}");
        }
        assert!(hook.serves_control(CONTROL_SORT_REQUEST));
        assert!(hook.serves_control(CONTROL_VLV_REQUEST));
        assert!(!hook.serves_control("1.2.840.113556.1.4.319"));
    }
}
