//! Writing RFC 4512 definitions: qdstrings and the NAME, DESC, OID-list and `X-` extension fields.

/// RFC 4512 qdstring escaping: `'` and `\` as `\27` and `\5C`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("\\27"),
            '\\' => out.push_str("\\5C"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Appends ` NAME 'a'`, or ` NAME ( 'a' 'b' )` for several names; nothing for none.
pub(crate) fn push_names(out: &mut String, names: &[String]) {
    match names {
        [] => {}
        [one] => {
            out.push_str(" NAME ");
            out.push_str(&quote(one));
        }
        many => {
            out.push_str(" NAME (");
            for name in many {
                out.push(' ');
                out.push_str(&quote(name));
            }
            out.push_str(" )");
        }
    }
}

/// Appends ` DESC 'text'` when there is a description.
pub(crate) fn push_desc(out: &mut String, desc: Option<&str>) {
    if let Some(desc) = desc {
        out.push_str(" DESC ");
        out.push_str(&quote(desc));
    }
}

/// Appends ` KEYWORD oid`, or ` KEYWORD ( a $ b )` for several OIDs; nothing for none.
pub(crate) fn push_oids(out: &mut String, keyword: &str, oids: &[String]) {
    match oids {
        [] => {}
        [one] => out.push_str(&format!(" {keyword} {one}")),
        many => out.push_str(&format!(" {keyword} ( {} )", many.join(" $ "))),
    }
}

/// Appends each `X-` extension with its qdstring value, or its list of them.
pub(crate) fn push_extensions(out: &mut String, extensions: &[(String, Vec<String>)]) {
    for (name, values) in extensions {
        out.push(' ');
        out.push_str(name);
        match values.as_slice() {
            [one] => {
                out.push(' ');
                out.push_str(&quote(one));
            }
            many => {
                out.push_str(" (");
                for v in many {
                    out.push(' ');
                    out.push_str(&quote(v));
                }
                out.push_str(" )");
            }
        }
    }
}
