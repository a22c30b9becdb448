//! The options of the group overlays: dynlist's attribute sets and memberof's.

use canopy_directory::dynlist::Dynlist;
use canopy_directory::overlay::memberof::{self, Dangling};
use canopy_proto::ResultCode;

use super::values::{result_code, string, strings};

/// slapd's `dynlist-attrset` lines: `attrset`, a list (or one string).
pub(super) fn dynlist_config(options: &toml::Table) -> Result<Dynlist, String> {
    let mut lines = None;
    for (key, value) in options {
        match key.as_str() {
            "attrset" => lines = Some(strings(key, value)?),
            other => {
                return Err(format!(
                    "unknown option {other:?} (dynlist takes attrset, a list of dynlist-attrset \
                     lines)"
                ))
            }
        }
    }
    let lines = lines.ok_or(
        "attrset: missing (a list of dynlist-attrset lines, e.g. \"groupOfURLs memberURL member\")",
    )?;
    Dynlist::parse(lines.iter().map(String::as_str)).map_err(|e| format!("attrset: {e}"))
}

/// slapd's `memberof-*` options without the prefix.
pub(super) fn memberof_config(
    options: &toml::Table,
    root_dn: &str,
) -> Result<memberof::Config, String> {
    let mut config = memberof::Config::new(root_dn);
    let mut error_code = ResultCode::ConstraintViolation;
    let mut dangling = "ignore".to_string();
    for (key, value) in options {
        match key.as_str() {
            "group-oc" => config.group_class = string(key, value)?,
            "member-ad" => config.member_attr = string(key, value)?,
            "memberof-ad" => config.memberof_attr = string(key, value)?,
            "dn" => config.modifier = string(key, value)?,
            "refint" => {
                config.refint = value
                    .as_bool()
                    .ok_or_else(|| format!("{key}: expected true or false"))?
            }
            "dangling" => dangling = string(key, value)?,
            "dangling-error" => error_code = result_code(key, value)?,
            other => {
                return Err(format!(
                    "unknown option {other:?} (memberof takes group-oc, member-ad, memberof-ad, \
                     dangling, dangling-error, refint, dn)"
                ))
            }
        }
    }
    config.dangling = match dangling.as_str() {
        "ignore" => Dangling::Ignore,
        "drop" => Dangling::Drop,
        "error" => Dangling::Error(error_code),
        other => return Err(format!("dangling: {other:?} is not ignore, drop or error")),
    };
    Ok(config)
}
