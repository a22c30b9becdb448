//! Overlay options into `[[overlay]]` tables, and accesslog's log database folded into its overlay.

use super::access::requote;
use super::database::is_known_directive;
use super::{boolean, norm, Directive, Model, Remark, Val};

/// How an overlay option is carried: slapd's name (normalized), the overlay, Canopy's key and the kind.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Bool,
    /// Words, or several lines, gathered into one list.
    Words,
    /// The whole line as one string, several lines gathered into a list.
    Line,
}

const OVERLAY_OPTIONS: [(&str, &str, &str, Kind); 52] = [
    ("logdb", "accesslog", "logdb", Kind::Str),
    ("logops", "accesslog", "logops", Kind::Words),
    ("logsuccess", "accesslog", "logsuccess", Kind::Bool),
    ("logpurge", "accesslog", "logpurge", Kind::Line),
    ("memberofgroupoc", "memberof", "group-oc", Kind::Str),
    ("memberofmemberad", "memberof", "member-ad", Kind::Str),
    ("memberofmemberofad", "memberof", "memberof-ad", Kind::Str),
    ("memberofdangling", "memberof", "dangling", Kind::Str),
    (
        "memberofdanglingerror",
        "memberof",
        "dangling-error",
        Kind::Str,
    ),
    ("memberofrefint", "memberof", "refint", Kind::Bool),
    ("memberofdn", "memberof", "dn", Kind::Str),
    ("refintattributes", "refint", "attributes", Kind::Words),
    ("refintattribute", "refint", "attributes", Kind::Words),
    ("refintnothing", "refint", "nothing", Kind::Str),
    ("refintmodifiersname", "refint", "modifiersname", Kind::Str),
    ("uniqueuri", "unique", "uri", Kind::Line),
    ("uniqueattributes", "unique", "attributes", Kind::Words),
    ("uniqueattribute", "unique", "attributes", Kind::Words),
    ("uniqueignore", "unique", "ignore", Kind::Words),
    ("uniquebase", "unique", "base", Kind::Str),
    ("uniquestrict", "unique", "strict", Kind::Bool),
    (
        "constraintattribute",
        "constraint",
        "constraints",
        Kind::Line,
    ),
    ("dynlistattrset", "dynlist", "attrset", Kind::Line),
    ("homedirskeletonpath", "homedir", "skeleton-path", Kind::Str),
    ("skeletonpath", "homedir", "skeleton-path", Kind::Str),
    ("homedirminuidnumber", "homedir", "min-uidnumber", Kind::Str),
    ("minimumuidnumber", "homedir", "min-uidnumber", Kind::Str),
    ("homedirregexp", "homedir", "regexp", Kind::Line),
    ("homedirdeletestyle", "homedir", "delete-style", Kind::Str),
    ("homedirarchivepath", "homedir", "archive-path", Kind::Str),
    ("archivepath", "homedir", "archive-path", Kind::Str),
    ("auditlog", "auditlog", "file", Kind::Str),
    ("auditlogfile", "auditlog", "file", Kind::Str),
    ("ppolicydefault", "ppolicy", "default", Kind::Str),
    (
        "ppolicyhashcleartext",
        "ppolicy",
        "hash_cleartext",
        Kind::Bool,
    ),
    ("ppolicyuselockout", "ppolicy", "use_lockout", Kind::Bool),
    ("retcodeparent", "retcode", "parent", Kind::Str),
    ("retcodeitem", "retcode", "item", Kind::Line),
    ("retcodesleep", "retcode", "sleep", Kind::Str),
    ("retcodeindir", "retcode", "indir", Kind::Bool),
    ("valsortattr", "valsort", "attr", Kind::Line),
    ("sssvlvmax", "sssvlv", "max", Kind::Str),
    ("sssvlvmaxkeys", "sssvlv", "maxkeys", Kind::Str),
    ("sssvlvmaxperconn", "sssvlv", "maxperconn", Kind::Str),
    ("ddsstate", "dds", "state", Kind::Bool),
    ("ddsmaxttl", "dds", "max-ttl", Kind::Str),
    ("ddsminttl", "dds", "min-ttl", Kind::Str),
    ("ddsdefaultttl", "dds", "default-ttl", Kind::Str),
    ("ddsinterval", "dds", "interval", Kind::Str),
    ("ddstolerance", "dds", "tolerance", Kind::Str),
    (
        "ddsmaxdynamicobjects",
        "dds",
        "max-dynamicObjects",
        Kind::Str,
    ),
    (
        "ppolicyforwardupdates",
        "ppolicy",
        "forward_updates",
        Kind::Bool,
    ),
];

/// Options of ppolicy not in the table above for want of room in a fixed-size array.
const PPOLICY_NETSCAPE: &str = "ppolicysendnetscapecontrols";

/// Options of the current overlay. Returns false when `name` is not one, so that it is read as a database
/// directive (slapd does the same: overlay options first, then the database's).
pub(super) fn overlay_option(
    m: &mut Model,
    d: &Directive,
    name: &str,
    overlay: &str,
    known: bool,
) -> bool {
    if overlay == "syncprov" && name.starts_with("syncprov") {
        m.note(
            d,
            "Canopy's provider keeps its own session log and checkpoints (docs/replication.md)",
        );
        return true;
    }
    if !known {
        if name.starts_with(&norm(overlay)) || !is_known_directive(name) {
            m.leave(
                d,
                format!("an option of the `{overlay}` overlay, which is not translated"),
            );
            return true;
        }
        return false;
    }
    // retcode items that send unsolicited responses or drop the connection: Canopy's retcode answers
    // with results only.
    if overlay == "retcode"
        && name == "retcodeitem"
        && d.args.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            a.starts_with("unsolicited=") || a.starts_with("flags=")
        })
    {
        m.leave(
            d,
            "Canopy's retcode answers with results only (no unsolicited responses or disconnections); the item is left out",
        );
        return true;
    }
    let found = OVERLAY_OPTIONS
        .iter()
        .find(|(slapd, o, _, _)| *slapd == name && *o == overlay)
        .map(|(_, _, key, kind)| (*key, *kind))
        .or_else(|| {
            (overlay == "ppolicy" && name == PPOLICY_NETSCAPE)
                .then_some(("send_netscape_controls", Kind::Bool))
        });
    let Some((key, kind)) = found else {
        if name.starts_with(&norm(overlay))
            || (overlay == "auditlog" && name.starts_with("auditlog"))
        {
            m.leave(
                d,
                format!("Canopy's `{overlay}` overlay has no such option (docs/overlays.md)"),
            );
            return true;
        }
        return false;
    };
    let value = match kind {
        Kind::Str => match d.args.as_slice() {
            [one] => Val::Str(one.clone()),
            _ => {
                m.leave(d, "expected one value");
                return true;
            }
        },
        Kind::Bool => match d.args.as_slice() {
            [] => Val::Bool(true),
            [one] => match boolean(one) {
                Some(b) => Val::Bool(b),
                None => {
                    m.leave(d, "expected TRUE or FALSE");
                    return true;
                }
            },
            _ => {
                m.leave(d, "expected one value");
                return true;
            }
        },
        Kind::Words => Val::List(
            d.args
                .iter()
                .flat_map(|a| a.split([',', ' ']))
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect(),
        ),
        Kind::Line => Val::List(vec![d
            .args
            .iter()
            .map(|a| requote(a))
            .collect::<Vec<_>>()
            .join(" ")]),
    };
    let Some(db) = m.databases.last_mut() else {
        return true;
    };
    let Some(target) = db.overlays.last_mut() else {
        return true;
    };
    match (target.options.iter_mut().find(|(k, _)| k == key), value) {
        (Some((_, Val::List(have))), Val::List(more)) => have.extend(more),
        (Some(_), _) => m.leave(d, format!("`{key}` given twice; the first is kept")),
        (None, value) => target.options.push((key.to_string(), value)),
    }
    true
}

/// The log database of an `overlay accesslog` (its `logdb`): Canopy's overlay makes it itself, so its
/// `database` section becomes the overlay's `access` (its rules), with a note.
pub(super) fn fold_log_databases(m: &mut Model) {
    let logdbs: Vec<(usize, String)> = m
        .databases
        .iter()
        .enumerate()
        .flat_map(|(i, db)| {
            db.overlays
                .iter()
                .filter(|o| o.name == "accesslog")
                .filter_map(
                    move |o| match o.options.iter().find(|(k, _)| k == "logdb") {
                        Some((_, Val::Str(dn))) => Some((i, dn.clone())),
                        _ => None,
                    },
                )
        })
        .collect();
    let same = |a: &str, b: &str| {
        let squeeze = |t: &str| t.replace(' ', "").to_ascii_lowercase();
        squeeze(a) == squeeze(b)
    };
    for (owner, dn) in logdbs {
        let Some(log) = m
            .databases
            .iter()
            .position(|db| db.suffix.as_deref().is_some_and(|s| same(s, &dn)))
        else {
            continue;
        };
        let removed = m.databases.remove(log);
        let owner = if log < owner { owner - 1 } else { owner };
        if let Some(overlay) = m.databases[owner]
            .overlays
            .iter_mut()
            .find(|o| o.name == "accesslog")
        {
            if !removed.access.is_empty() {
                overlay
                    .options
                    .push(("access".into(), Val::List(removed.access.clone())));
            }
        }
        m.notes.push(Remark {
            origin: removed.origin.clone(),
            text: format!("database with suffix {dn}"),
            reason: "the accesslog overlay's log database: Canopy's overlay opens it itself \
                     (DATA/accesslog, syncprov included); its access rules became the overlay's `access`"
                .into(),
        });
    }
}
