//! Keeping secrets out of logs: filters are logged with the values of password attributes replaced.

use canopy_proto::{Filter, SubstringFilter};
use canopy_schema::Schema;

/// What a redacted value is logged as.
pub const REDACTED: &[u8] = b"<redacted>";

/// Whether an attribute description names a password attribute: userPassword or authPassword, their
/// subtypes, with any options. Unknown names are judged by name.
pub fn is_password_attribute(schema: &Schema, desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    let Some(at) = schema.attribute_type(name) else {
        return ["userPassword", "authPassword"]
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name));
    };
    ["userPassword", "authPassword"].iter().any(|p| {
        schema
            .attribute_type(p)
            .is_some_and(|secret| schema.is_subtype_of(at, secret))
    })
}

/// `filter` as RFC 4515 text for a log line, with every value asserted of a password attribute replaced by
/// `<redacted>` (an extensible match without a type could test one, so its value is replaced too).
pub fn filter_for_log(schema: &Schema, filter: &Filter) -> String {
    redacted(schema, filter).to_string()
}

fn redacted(schema: &Schema, filter: &Filter) -> Filter {
    let secret = |attr: &str| is_password_attribute(schema, attr);
    let hide = |attr: &str, value: &[u8]| {
        if secret(attr) {
            REDACTED.to_vec()
        } else {
            value.to_vec()
        }
    };
    match filter {
        Filter::And(parts) => Filter::And(parts.iter().map(|f| redacted(schema, f)).collect()),
        Filter::Or(parts) => Filter::Or(parts.iter().map(|f| redacted(schema, f)).collect()),
        Filter::Not(inner) => Filter::Not(Box::new(redacted(schema, inner))),
        Filter::Equality(a, v) => Filter::Equality(a.clone(), hide(a, v)),
        Filter::GreaterOrEqual(a, v) => Filter::GreaterOrEqual(a.clone(), hide(a, v)),
        Filter::LessOrEqual(a, v) => Filter::LessOrEqual(a.clone(), hide(a, v)),
        Filter::Approx(a, v) => Filter::Approx(a.clone(), hide(a, v)),
        Filter::Substrings(sub) if secret(&sub.attr) => Filter::Substrings(SubstringFilter {
            attr: sub.attr.clone(),
            initial: Some(REDACTED.to_vec()),
            any: Vec::new(),
            final_: None,
        }),
        Filter::Extensible(mra) => {
            let mut mra = mra.clone();
            if mra.attr.as_deref().is_none_or(secret) {
                mra.value = REDACTED.to_vec();
            }
            Filter::Extensible(mra)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(text: &str) -> String {
        let schema = Schema::builtin();
        filter_for_log(&schema, &Filter::parse(text).expect("test filter parses"))
    }

    #[test]
    fn password_values_never_reach_the_log() {
        let line = logged(
            "(&(uid=alice)(|(userPassword=hunter2)(userPassword;x-tag>=hunter2)(authPassword~=hunter2)\
             (userPassword=hun*ter2*)(:caseExactMatch:=hunter2)(userPassword:octetStringMatch:=hunter2)))",
        );
        assert!(!line.contains("hunter2"), "{line}");
        assert!(line.contains("(uid=alice)"), "{line}");
        assert!(line.contains("userPassword"), "{line}");
    }

    #[test]
    fn other_values_are_kept() {
        assert_eq!(logged("(cn=Bob*)"), "(cn=Bob*)");
        assert_eq!(logged("(!(mail=a@b))"), "(!(mail=a@b))");
        assert_eq!(logged("(cn:caseExactMatch:=X)"), "(cn:caseExactMatch:=X)");
    }
}
