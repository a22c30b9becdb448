//! Replication: `syncrepl` lines into `[[syncrepl]]` tables, and what Canopy's consumers need.

use super::{Directive, Model, Val};

/// The syncrepl keywords Canopy's `[[syncrepl]]` tables take (issue 11), and whether each is a number.
const SYNCREPL_KEYS: [(&str, bool); 19] = [
    ("syncdata", false),
    ("logbase", false),
    ("logfilter", false),
    ("rid", true),
    ("provider", false),
    ("searchbase", false),
    ("scope", false),
    ("filter", false),
    ("attrs", false),
    ("type", false),
    ("interval", false),
    ("bindmethod", false),
    ("saslmech", false),
    ("binddn", false),
    ("credentials", false),
    ("retry", false),
    ("tls_cacert", false),
    ("timeout", true),
    ("starttls", false),
];

pub(super) fn syncrepl(m: &mut Model, d: &Directive, db: usize) {
    let mut table: Vec<(String, Val)> = Vec::new();
    let mut unknown = Vec::new();
    for arg in &d.args {
        let Some((key, value)) = arg.split_once('=') else {
            unknown.push(arg.clone());
            continue;
        };
        let key = key.to_ascii_lowercase();
        // slapd's defaults, which slapd.d files spell out: the same as leaving them out.
        let default = matches!(
            (key.as_str(), value.to_ascii_lowercase().as_str()),
            ("timeout" | "network-timeout" | "tcp-user-timeout", "0")
                | ("starttls", "no")
                | ("filter", "(objectclass=*)")
                | ("scope", "sub" | "subtree")
                | ("keepalive", "0:0:0")
                | ("schemachecking", "off")
                | ("syncdata", "default")
        );
        if default {
            continue;
        }
        match SYNCREPL_KEYS.iter().find(|(k, _)| *k == key) {
            Some((k, true)) => match value.parse::<i64>() {
                Ok(n) => table.push((k.to_string(), Val::Int(n))),
                Err(_) => unknown.push(arg.clone()),
            },
            Some((k, false)) => table.push((k.to_string(), Val::Str(value.to_string()))),
            None => unknown.push(key),
        }
    }
    if !table.iter().any(|(k, _)| k == "provider") {
        return m.leave(d, "a syncrepl line without provider=");
    }
    if !unknown.is_empty() {
        m.leave(
            d,
            format!(
                "syncrepl keywords Canopy does not take, left out of the table: {}",
                unknown.join(", ")
            ),
        );
    }
    m.databases[db].syncrepl.push(table);
}

/// Canopy's consumers need an equality index on entryUUID to find the entries they receive: the
/// index list of a database with consumers gains `entryUUID eq` when it names its indexes without
/// it. Each database keeps its own consumers, `updateref` and `multiprovider` (the first one's as
/// top-level keys, the others' in their `[[database]]` tables).
pub(super) fn finish_replication(m: &mut Model) {
    let indexed = |(attr, kinds): &(String, Vec<String>)| {
        attr.eq_ignore_ascii_case("entryUUID") && kinds.iter().any(|k| k == "eq")
    };
    for db in m.databases.iter_mut() {
        if !db.syncrepl.is_empty() && !db.indexes.is_empty() && !db.indexes.iter().any(indexed) {
            db.indexes.push(("entryUUID".into(), vec!["eq".into()]));
        }
    }
}
