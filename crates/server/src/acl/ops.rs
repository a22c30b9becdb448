//! The access checks of each operation, as slapd's back-mdb makes them, with slapd's result codes.

use canopy_core::{Entry, LdapError};
use canopy_directory::View;
use canopy_proto::{Change, ModifyOperation, ResultCode};
use canopy_schema::NormDn;

use super::{privileges as p, AttrRef, Checker, Mask, Target};
use super::{GroupReader, Guarded};
use crate::access::Who;

fn denied(text: &str) -> LdapError {
    LdapError::new(ResultCode::InsufficientAccessRights, text)
}

/// Loads an entry for rules with filters; None when the ACL needs only DNs or the entry is missing.
pub fn entry_for_rules<T: View>(dir: &impl Guarded, txn: &T, ndn: &NormDn) -> Option<Entry> {
    if !dir.acl().needs_entry() {
        return None;
    }
    dir.entry_at(txn, ndn)
}

/// Runs `f` with a checker for `who` reading groups in `txn`.
pub fn with_checker<T: View, R>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    f: impl FnOnce(&Checker<'_>) -> R,
) -> R {
    let groups = GroupReader { dir, txn };
    let checker = dir.acl().checker(dir.schema(), who, &groups);
    f(&checker)
}

/// `need` on the `children` of the parent of `ndn`. The suffix has no parent in the database: only the
/// root DN adds or deletes it, as in slapd.
fn parent_children<T: View>(
    dir: &impl Guarded,
    txn: &T,
    checker: &Checker<'_>,
    ndn: &NormDn,
    need: Mask,
) -> bool {
    if checker.who().root {
        return true;
    }
    match ndn.parent().filter(|_| ndn != dir.suffix()) {
        Some(parent) => {
            let entry = entry_for_rules(dir, txn, &parent);
            let target = Target {
                ndn: &parent,
                entry: entry.as_ref(),
            };
            checker.allows(target, AttrRef::Children, need)
        }
        None => false,
    }
}

/// Add: `add` on the parent's `children` and on the new entry's `entry` (slapd 2.5).
pub fn check_add<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
) -> Result<(), LdapError> {
    check_entry_change(dir, txn, who, entry, p::ADD)
}

/// Delete: `delete` on the parent's `children` and on the entry's `entry`.
pub fn check_delete<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
) -> Result<(), LdapError> {
    check_entry_change(dir, txn, who, entry, p::DELETE)
}

/// `need` (add or delete) on the parent's `children` and on the entry's `entry`.
fn check_entry_change<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    need: Mask,
) -> Result<(), LdapError> {
    // slapd refuses every update from an anonymous client before its access rules.
    who.require_authenticated()?;
    with_checker(dir, txn, who, |checker| {
        if !parent_children(dir, txn, checker, &entry.ndn, need) {
            return Err(denied("no write access to parent"));
        }
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        if !checker.allows(target, AttrRef::Entry, need) {
            return Err(denied("no write access to entry"));
        }
        Ok(())
    })
}

/// The Relax Rules control's writes of bookkeeping attributes: `manage` on each of `descs`.
pub fn check_manage<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    descs: &[&str],
) -> Result<(), LdapError> {
    if descs.is_empty() {
        return Ok(());
    }
    with_checker(dir, txn, who, |checker| {
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        match descs
            .iter()
            .all(|desc| checker.allows(target, AttrRef::Attr(desc), p::MANAGE))
        {
            true => Ok(()),
            false => Err(denied("no manage access to entry")),
        }
    })
}

/// Modify: `add` for added values, `delete` for deleted ones, both for replace and increment, on each
/// attribute touched.
pub fn check_modify<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    changes: &[Change],
) -> Result<(), LdapError> {
    // slapd refuses every update from an anonymous client before its access rules.
    who.require_authenticated()?;
    with_checker(dir, txn, who, |checker| {
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        for change in changes {
            let desc = change.modification.name.as_str();
            let values = &change.modification.values;
            let allowed = match change.operation {
                // Added and deleted values are checked one by one (so `val=` rules apply), a delete of
                // the whole attribute as a whole, as slapd's acl_check_modlist does.
                ModifyOperation::Add => each_value(checker, target, desc, values, p::ADD),
                ModifyOperation::Delete if values.is_empty() => {
                    checker.allows(target, AttrRef::Attr(desc), p::DELETE)
                }
                ModifyOperation::Delete => each_value(checker, target, desc, values, p::DELETE),
                ModifyOperation::Replace => {
                    checker.allows(target, AttrRef::Attr(desc), p::DELETE)
                        && each_value(checker, target, desc, values, p::ADD)
                }
                ModifyOperation::Increment => checker.allows(target, AttrRef::Attr(desc), p::WRITE),
            };
            if !allowed {
                return Err(denied("no write access to entry"));
            }
        }
        Ok(())
    })
}

/// `need` on every value; with no values, on the attribute.
fn each_value(
    checker: &Checker<'_>,
    target: Target<'_>,
    desc: &str,
    values: &[Vec<u8>],
    need: Mask,
) -> bool {
    if values.is_empty() {
        return checker.allows(target, AttrRef::Attr(desc), need);
    }
    values
        .iter()
        .all(|v| checker.allows(target, AttrRef::Value(desc, v), need))
}

/// Modify DN: `write` on the old parent's `children` (`delete` when the entry moves) and on the entry,
/// `add` on the new parent's `children`, and `add` on the new naming attributes.
/// The first access check of a rename, made before slapd looks at the entry: `write` (a rename in
/// place) or `delete` (a move) on the parent's `children`.
pub fn check_rename_from<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    ndn: &NormDn,
    moving: bool,
) -> Result<(), LdapError> {
    who.require_authenticated()?;
    with_checker(dir, txn, who, |checker| {
        let need = if moving { p::DELETE } else { p::WRITE };
        match parent_children(dir, txn, checker, ndn, need) {
            true => Ok(()),
            false => Err(denied("no write access to parent's children")),
        }
    })
}

pub fn check_rename<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    new_parent: Option<&NormDn>,
    rdn_attrs: &[&str],
) -> Result<(), LdapError> {
    // slapd refuses every update from an anonymous client before its access rules.
    who.require_authenticated()?;
    with_checker(dir, txn, who, |checker| {
        if checker.who().root {
            return Ok(());
        }
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        // A rename in place writes the parent's children, a move deletes from them (slapd's order).
        let old_parent = if new_parent.is_some() {
            p::DELETE
        } else {
            p::WRITE
        };
        if !parent_children(dir, txn, checker, &entry.ndn, old_parent) {
            return Err(denied("no write access to parent's children"));
        }
        if !checker.allows(target, AttrRef::Entry, p::WRITE) {
            return Err(denied("no write access to entry"));
        }
        if let Some(parent) = new_parent {
            let parent_entry = entry_for_rules(dir, txn, parent);
            let target = Target {
                ndn: parent,
                entry: parent_entry.as_ref(),
            };
            if !checker.allows(target, AttrRef::Children, p::ADD) {
                return Err(denied("no write access to new superior's children"));
            }
        }
        for attr in rdn_attrs {
            if !checker.allows(target, AttrRef::Attr(attr), p::ADD) {
                return Err(denied("no write access to entry's naming attribute"));
            }
        }
        Ok(())
    })
}

/// Whether `who` has `need` on `attr` of `entry` (a single check, outside searches).
pub fn allows<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    attr: AttrRef<'_>,
    need: Mask,
) -> bool {
    with_checker(dir, txn, who, |checker| {
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        checker.allows(target, attr, need)
    })
}

/// The attributes of `entry` that `who` holds `need` on; the rest are removed. Attributes under `val=`
/// rules keep only the values `need` is granted on.
pub fn retain_allowed<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &mut Entry,
    need: Mask,
) {
    if who.root {
        return;
    }
    let acl = dir.acl();
    let schema = dir.schema();
    let kept: Vec<Vec<bool>> = with_checker(dir, txn, who, |checker| {
        let target = Target {
            ndn: &entry.ndn,
            entry: Some(entry),
        };
        entry
            .attrs
            .iter()
            .map(|a| {
                if acl.has_value_rules() && acl.value_ruled(schema, &a.desc) {
                    let attr =
                        |v: &'_ Vec<u8>| checker.allows(target, AttrRef::Value(&a.desc, v), need);
                    a.values.iter().map(attr).collect()
                } else {
                    let whole = checker.allows(target, AttrRef::Attr(&a.desc), need);
                    vec![whole; a.values.len()]
                }
            })
            .collect()
    });
    for (attr, keep) in entry.attrs.iter_mut().zip(kept) {
        let mut keep = keep.into_iter();
        attr.values.retain(|_| keep.next().unwrap_or(false));
    }
    entry.attrs.retain(|a| !a.values.is_empty());
}

/// An error about an entry the requester may not know of: without `disclose` on it, noSuchObject
/// (no matched DN), else `error` itself.
pub fn unless_disclosed<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    entry: &Entry,
    error: LdapError,
) -> LdapError {
    if allows(dir, txn, who, entry, AttrRef::Entry, p::DISCLOSE) {
        error
    } else {
        LdapError::new(ResultCode::NoSuchObject, "")
    }
}

/// noSuchObject reveals its matched DN only to those with `disclose` on that entry, as slapd does.
pub fn hide_matched<T: View>(
    dir: &impl Guarded,
    txn: &T,
    who: &Who,
    mut error: LdapError,
) -> LdapError {
    if who.root || error.code != ResultCode::NoSuchObject {
        return error;
    }
    let Some(matched) = error.matched_dn.as_deref() else {
        return error;
    };
    let entry = dir
        .normalize(matched.as_bytes())
        .ok()
        .and_then(|(_, ndn)| dir.entry_at(txn, &ndn));
    let disclosed = entry.is_some_and(|e| allows(dir, txn, who, &e, AttrRef::Entry, p::DISCLOSE));
    if !disclosed {
        error.matched_dn = None;
    }
    error
}
