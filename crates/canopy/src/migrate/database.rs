//! Directives of a `database mdb` section: suffix, root DN, directory, indexes and the like.

use super::access::{access, Rules};
use super::limits::{limits, search_limit};
use super::syncrepl::syncrepl;
use super::{boolean, Directive, Model};

/// Directives this translator knows outside overlays: after an overlay it does not translate, these still
/// go to the database or the global settings (as slapd hands an overlay only what it recognizes).
pub(super) fn is_known_directive(name: &str) -> bool {
    is_database_directive(name)
        || name.starts_with("tls")
        || matches!(
            name,
            "include"
                | "passwordhash"
                | "authzregexp"
                | "saslregexp"
                | "serverid"
                | "idletimeout"
                | "sockbufmaxincoming"
                | "sockbufmaxincomingauth"
                | "maxfilterdepth"
                | "moduleload"
                | "modulepath"
                | "pidfile"
                | "argsfile"
                | "loglevel"
                | "threads"
                | "toolthreads"
        )
}

/// Directives that belong to a database section.
fn is_database_directive(name: &str) -> bool {
    matches!(
        name,
        "suffix"
            | "rootdn"
            | "rootpw"
            | "directory"
            | "index"
            | "access"
            | "limits"
            | "sizelimit"
            | "timelimit"
            | "readonly"
            | "subordinate"
            | "syncrepl"
            | "updateref"
            | "maxsize"
            | "checkpoint"
            | "dbnosync"
            | "nosync"
            | "lastmod"
            | "monitoring"
            | "mirrormode"
            | "multiprovider"
            | "envflags"
            | "maxreaders"
            | "mode"
            | "searchstack"
    )
}

pub(super) fn database_directive(m: &mut Model, d: &Directive, name: &str) -> bool {
    let one = d.args.first().cloned().unwrap_or_default();
    let single = d.args.len() == 1;
    let db_index = m.databases.len() - 1;
    match name {
        "suffix" if single => {
            let db = &mut m.databases[db_index];
            if db.suffix.is_some() {
                m.leave(d, "Canopy's databases have one suffix each; only the first is kept");
            } else {
                db.suffix = Some(one);
            }
        }
        "rootdn" if single => m.databases[db_index].root_dn = Some(one),
        "rootpw" if single => m.databases[db_index].root_pw = Some(one),
        "directory" if single => m.databases[db_index].directory = Some(one),
        "index" => index(m, d),
        "access" => access(m, d, Rules::Database(db_index)),
        "limits" => limits(m, d, Some(db_index)),
        "sizelimit" | "timelimit" => search_limit(m, d, name, Some(db_index)),
        "readonly" => match d.args.as_slice() {
            [v] if boolean(v).is_some() => m.databases[db_index].read_only = boolean(v),
            _ => m.leave(d, "expected on or off"),
        },
        "subordinate" => match d.args.as_slice() {
            [] => m.databases[db_index].subordinate = true,
            [v] if boolean(v) == Some(true) => m.databases[db_index].subordinate = true,
            [v] if boolean(v) == Some(false) => {}
            _ => {
                m.databases[db_index].subordinate = true;
                m.leave(d, "`advertise` (listing the glued database in the root DSE) is not supported; glued without it");
            }
        },
        "syncrepl" => syncrepl(m, d, db_index),
        "updateref" if single => {
            if m.databases[db_index].updateref.is_some() {
                m.leave(d, "one updateref per database; the first is kept");
            } else {
                m.databases[db_index].updateref = Some(one);
            }
        }
        "dbnosync" | "nosync" => match d.args.as_slice() {
            [] => m.databases[db_index].nosync = true,
            [v] if boolean(v).is_some() => m.databases[db_index].nosync = boolean(v) == Some(true),
            _ => m.leave(d, "expected TRUE or FALSE"),
        },
        "maxsize" | "checkpoint" | "maxreaders" | "searchstack" | "mode" | "monitoring" | "rtxnsize" => {
            m.note(d, "LMDB tuning that Canopy does itself (its map grows as needed, commits are durable per transaction)")
        }
        "lastmod" => match d.args.first().and_then(|v| boolean(v)) {
            Some(true) => m.note(d, "Canopy always keeps the operational attributes"),
            _ => m.leave(d, "Canopy always keeps createTimestamp, modifiersName, entryCSN and the like"),
        },
        "mirrormode" | "multiprovider" => match d.args.first().and_then(|v| boolean(v)) {
            Some(false) => m.note(d, "off, as in Canopy"),
            Some(true) => m.databases[db_index].multiprovider = true,
            None => m.leave(d, "expected TRUE or FALSE"),
        },
        _ => return false,
    }
    true
}

fn index(m: &mut Model, d: &Directive) {
    let (attrs, kinds) = match d.args.as_slice() {
        [attrs] => (attrs, "eq"),
        [attrs, kinds] => (attrs, kinds.as_str()),
        _ => return m.leave(d, "expected attributes and index kinds"),
    };
    let mut canopy = Vec::new();
    for kind in kinds.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let k = match kind.to_ascii_lowercase().as_str() {
            "eq" | "equality" => "eq",
            "pres" | "present" => "pres",
            "sub" | "substr" | "substring" | "subinitial" | "subany" | "subfinal" => "sub",
            "approx" | "approximate" => "approx",
            "nolang" | "nosubtypes" | "notags" => {
                m.note(
                    d,
                    format!(
                        "`{kind}`: Canopy's indexes hold subtypes; results are the same either way"
                    ),
                );
                continue;
            }
            _ => return m.leave(d, format!("unknown index kind `{kind}`")),
        };
        if !canopy.contains(&k) {
            canopy.push(k);
        }
    }
    if attrs
        .split(',')
        .any(|a| a.trim().eq_ignore_ascii_case("default"))
    {
        m.note(d, "`index default` sets the kinds of later index lines without kinds; Canopy lists kinds on each");
    }
    let Some(db) = m.databases.last_mut() else {
        return;
    };
    for attr in attrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if attr.eq_ignore_ascii_case("default") {
            continue;
        }
        match db
            .indexes
            .iter_mut()
            .find(|(a, _)| a.eq_ignore_ascii_case(attr))
        {
            Some((_, have)) => {
                for k in &canopy {
                    if !have.iter().any(|h| h == k) {
                        have.push(k.to_string());
                    }
                }
            }
            None => db.indexes.push((
                attr.to_string(),
                canopy.iter().map(|k| k.to_string()).collect(),
            )),
        }
    }
}
