//! Replication: `syncrepl` lines into `[[syncrepl]]` tables, and what Canopy's consumers need.

use super::{Directive, Model, Remark, Val};

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

/// Canopy's consumers feed the first database only, and need an equality index on entryUUID to find
/// the entries they receive: a consumer of another database is left out (with its `updateref`), and the
/// first database's index list gains `entryUUID eq` when it names its indexes without it. Runs after
/// the outermost database has moved to the front.
pub(super) fn finish_replication(m: &mut Model) {
    let mut left = Vec::new();
    for db in m.databases.iter_mut().skip(1) {
        if !db.syncrepl.is_empty() {
            left.push(Remark {
                origin: db.origin.clone(),
                text: "syncrepl".into(),
                reason:
                    "Canopy's [[syncrepl]] consumers feed the first database only \
                         (docs/replication.md); this database's consumer and updateref are left out"
                        .into(),
            });
            db.syncrepl.clear();
            db.updateref = None;
        }
        if db.multiprovider {
            left.push(Remark {
                origin: db.origin.clone(),
                text: "multiprovider on".into(),
                reason: "Canopy's multi-provider replication is the first database's \
                         (docs/replication.md); this database's is left out"
                    .into(),
            });
            db.multiprovider = false;
        }
    }
    m.left_out.extend(left);
    if let Some(first) = m.databases.first_mut() {
        let indexed = |(attr, kinds): &(String, Vec<String>)| {
            attr.eq_ignore_ascii_case("entryUUID") && kinds.iter().any(|k| k == "eq")
        };
        if !first.syncrepl.is_empty()
            && !first.indexes.is_empty()
            && !first.indexes.iter().any(indexed)
        {
            first.indexes.push(("entryUUID".into(), vec!["eq".into()]));
        }
    }
}
