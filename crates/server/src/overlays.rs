//! `[[overlay]]` tables: slapd's overlay names and options (without their prefix), checked and turned
//! into the backend's write hooks, in the order they are listed (docs/overlays.md).

use std::sync::Arc;

use canopy_directory::overlay::constraint::{self, Constraint};
use canopy_directory::overlay::memberof::{self, Dangling, MemberOf};
use canopy_directory::{Pipeline, WriteHook};
use canopy_proto::ResultCode;
use serde::Deserialize;

/// One `[[overlay]]` table: `name` and the overlay's options.
#[derive(Debug, Clone, Deserialize)]
pub struct OverlayConfig {
    pub name: String,
    #[serde(flatten)]
    pub options: toml::Table,
}

/// The overlays Canopy has, by slapd's name.
pub const KNOWN: [&str; 2] = ["memberof", "constraint"];

/// Checks every table: a known overlay, known options with values of the right kind, each overlay once.
pub fn check(overlays: &[OverlayConfig]) -> Result<(), String> {
    for (i, overlay) in overlays.iter().enumerate() {
        if overlays[..i].iter().any(|o| o.name == overlay.name) {
            return Err(format!(
                "[[overlay]] {:?} is configured twice",
                overlay.name
            ));
        }
        hook(overlay, "cn=check").map_err(|e| format!("[[overlay]] {:?}: {e}", overlay.name))?;
    }
    Ok(())
}

/// The schema an overlay brings (slapd's module defines it), to load before anything uses it.
pub fn schema(overlays: &[OverlayConfig]) -> Vec<&'static str> {
    overlays
        .iter()
        .filter(|o| o.name == "memberof")
        .map(|_| memberof::MEMBEROF_SCHEMA)
        .collect()
}

/// The standard pipeline with the configured overlays after it; `root_dn` records their own changes.
pub fn pipeline(overlays: &[OverlayConfig], root_dn: &str) -> Result<Pipeline, String> {
    let mut pipeline = Pipeline::standard();
    for overlay in overlays {
        let hook =
            hook(overlay, root_dn).map_err(|e| format!("[[overlay]] {:?}: {e}", overlay.name))?;
        pipeline = pipeline.then(hook);
    }
    Ok(pipeline)
}

fn hook(overlay: &OverlayConfig, root_dn: &str) -> Result<Arc<dyn WriteHook>, String> {
    match overlay.name.as_str() {
        "memberof" => Ok(Arc::new(MemberOf::new(memberof_config(
            &overlay.options,
            root_dn,
        )?))),
        "constraint" => Ok(Arc::new(Constraint::new(constraint_config(
            &overlay.options,
        )?))),
        other => Err(format!(
            "unknown overlay {other:?} (known: {})",
            KNOWN.join(", ")
        )),
    }
}

/// slapd's `memberof-*` options without the prefix.
fn memberof_config(options: &toml::Table, root_dn: &str) -> Result<memberof::Config, String> {
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

/// `constraints`: one string per slapd `constraint_attribute` line, without the keyword. The syntax
/// is checked here; the names against the schema when the database opens (`WriteHook::check`).
fn constraint_config(options: &toml::Table) -> Result<Vec<constraint::Rule>, String> {
    let mut rules = None;
    for (key, value) in options {
        match key.as_str() {
            "constraints" => {
                let lines = value
                    .as_array()
                    .ok_or_else(|| format!("{key}: expected a list of strings"))?;
                let mut parsed = Vec::with_capacity(lines.len());
                for (i, line) in lines.iter().enumerate() {
                    let line = line
                        .as_str()
                        .ok_or_else(|| format!("{key}[{i}]: expected a string"))?;
                    let rule = constraint::Rule::parse(line)
                        .map_err(|e| format!("{key}[{i}] {line:?}: {e}"))?;
                    parsed.push(rule);
                }
                rules = Some(parsed);
            }
            other => {
                return Err(format!(
                    "unknown option {other:?} (constraint takes constraints, a list of \
                     constraint_attribute lines)"
                ))
            }
        }
    }
    rules.ok_or_else(|| {
        "constraints: missing (a list of constraint_attribute lines, e.g. \"mail size 256\")".into()
    })
}

fn string(key: &str, value: &toml::Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key}: expected a string"))
}

/// A result code by number or by its RFC 4511 name (`constraintViolation`).
fn result_code(key: &str, value: &toml::Value) -> Result<ResultCode, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn overlay(text: &str) -> OverlayConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn memberof_options_as_slapd_names_them() {
        let o = overlay(
            "name = \"memberof\"\ngroup-oc = \"groupOfUniqueNames\"\nmember-ad = \"uniqueMember\"\n\
             dangling = \"error\"\ndangling-error = \"noSuchObject\"\nrefint = true\n",
        );
        let config = memberof_config(&o.options, "cn=admin").unwrap();
        assert_eq!(config.group_class, "groupOfUniqueNames");
        assert_eq!(config.member_attr, "uniqueMember");
        assert_eq!(config.memberof_attr, "memberOf");
        assert_eq!(config.dangling, Dangling::Error(ResultCode::NoSuchObject));
        assert!(config.refint);
        assert_eq!(config.modifier, "cn=admin");
        let numbered = overlay("name = \"memberof\"\ndangling = \"error\"\ndangling-error = 53\n");
        assert_eq!(
            memberof_config(&numbered.options, "x").unwrap().dangling,
            Dangling::Error(ResultCode::UnwillingToPerform)
        );
    }

    #[test]
    fn bad_tables_are_refused_with_the_reason() {
        let bad = |text: &str, want: &str| {
            let err = check(&[overlay(text)]).unwrap_err();
            assert!(err.contains(want), "{err}");
        };
        bad("name = \"nosuch\"", "unknown overlay");
        bad("name = \"memberof\"\nbogus = 1", "unknown option \"bogus\"");
        bad("name = \"memberof\"\ndangling = \"sometimes\"", "dangling");
        bad("name = \"memberof\"\nrefint = \"yes\"", "refint");
        bad(
            "name = \"memberof\"\ndangling-error = \"nope\"",
            "dangling-error",
        );
        bad("name = \"memberof\"\ndangling-error = 0", "dangling-error");
        let twice = [
            overlay("name = \"memberof\""),
            overlay("name = \"memberof\""),
        ];
        assert!(check(&twice).unwrap_err().contains("twice"));
        assert_eq!(
            pipeline(&[overlay("name = \"memberof\"")], "cn=admin")
                .unwrap()
                .names(),
            ["stamping", "memberof"]
        );
    }

    #[test]
    fn constraint_tables() {
        // The example of docs/overlays.md.
        let table = r#"
            name = "constraint"
            constraints = [
              'jpegPhoto size 131072',
              'userPassword count 3',
              'mail regex ^[[:alnum:]]+@mydomain\\.com$',
              'mail negregex ^[[:alnum:]]+@notallowed\\.com$',
              'departmentNumber uri ldap:///ou=departments,dc=example,dc=com?ou?one?(objectClass=organizationalUnit)',
              'cn,sn,givenName set "(this/givenName + [ ] + this/sn) & this/cn" restrict="ldap:///ou=People,dc=example,dc=com??sub?(objectClass=inetOrgPerson)"',
            ]
        "#;
        let rules = constraint_config(&overlay(table).options).unwrap();
        assert_eq!(rules.len(), 6);
        assert_eq!(rules[2].text(), r"mail regex ^[[:alnum:]]+@mydomain\\.com$");
        let built = hook(&overlay(table), "cn=admin").unwrap();
        let schema = canopy_schema::Schema::builtin();
        let suffix =
            canopy_schema::NormDn::from_normalized_rdns(vec!["dc=example".into(), "dc=com".into()]);
        built.check(&schema, &suffix).unwrap();
        assert_eq!(
            pipeline(&[overlay(table)], "cn=admin").unwrap().names(),
            ["stamping", "constraint"]
        );
        let empty = overlay("name = \"constraint\"\nconstraints = []");
        assert!(constraint_config(&empty.options).unwrap().is_empty());

        // Each problem names the constraint and what is wrong with it.
        let bad = |lines: &str, want: &str| {
            let text = format!("name = \"constraint\"\nconstraints = [{lines}]");
            let err = check(&[overlay(&text)]).unwrap_err();
            assert!(
                err.contains("\"constraint\"") && err.contains(want),
                "{err}"
            );
        };
        bad(
            "'mail regex ^(a'",
            "constraints[0] \"mail regex ^(a\": bad regular expression",
        );
        bad("'mail size big'", "expected a number");
        bad(
            "'mail uri ldap://elsewhere/dc=x?mail'",
            "host is not allowed",
        );
        bad("'mail uri ldap:///dc=x???(mail=a'", "filter");
        bad("'mail uri ldap:///dc=x'", "names no attribute");
        bad("'cn set \"this/cn &\"'", "set");
        bad("'cn set \"this/cn % [x]\"'", "set");
        bad(
            "'mail size 1', 'mail neguri ldap:///dc=x?mail'",
            "constraints[1]",
        );
        bad("'mail size 1 restrict=ldap:///dc=x?cn'", "restrict URI");
        bad("'mail'", "expected ATTR");
        bad("1", "constraints[0]: expected a string");
        let missing = check(&[overlay("name = \"constraint\"")]).unwrap_err();
        assert!(missing.contains("constraints: missing"), "{missing}");
        let extra = check(&[overlay("name = \"constraint\"\nconstraints = []\nattr = 1")]);
        assert!(extra.unwrap_err().contains("unknown option \"attr\""));
        let listed = check(&[overlay(
            "name = \"constraint\"\nconstraints = \"mail size 1\"",
        )]);
        assert!(listed.unwrap_err().contains("expected a list"));

        // Names are checked against the schema and the suffix when the database opens.
        let unknown = |line: &str, want: &str| {
            let text = format!("name = \"constraint\"\nconstraints = ['{line}']");
            let err = hook(&overlay(&text), "cn=admin")
                .unwrap()
                .check(&schema, &suffix)
                .unwrap_err();
            assert!(err.contains(line) && err.contains(want), "{err}");
        };
        unknown("nosuch size 1", "attribute \"nosuch\"");
        unknown(
            "mail uri ldap:///dc=example,dc=com?nosuch?sub",
            "uri attribute",
        );
        unknown("mail uri ldap:///dc=other?mail?sub", "outside the database");
        unknown("entryCSN count 1", "operational");
    }

    #[test]
    fn a_constraint_on_an_unknown_attribute_stops_the_database_from_opening() {
        let tmp = tempfile::tempdir().unwrap();
        let text = format!(
            "data_dir = {:?}\n[[overlay]]\nname = \"constraint\"\nconstraints = [\"mial size 10\"]\n",
            tmp.path().display()
        );
        let config = crate::Config::parse(&text, "c.toml").unwrap();
        let err = crate::open_directory(&config, false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("constraint") && err.contains("mial size 10") && err.contains("\"mial\""),
            "{err}"
        );
    }
}
