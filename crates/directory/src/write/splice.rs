//! The splice path of a modify: values added to one large attribute are appended to its stored bytes,
//! whose other values are copied as one block, never decoded (docs/design/big-values.md).

use std::sync::atomic::{AtomicU64, Ordering};

use canopy_core::check::check_entry;
use canopy_core::wire::{attribute_spans, encode_entry_spliced, section_of, Section};
use canopy_core::{Attribute, LdapError};
use canopy_mdb::{ReadOps, WriteTxn};
use canopy_proto::{Change, Dn, ModifyOperation, ResultCode};
use canopy_schema::AttributeType;

use super::{failed, Action, Ctx, OBJECT_CLASS};
use crate::database::Directory;
use crate::error::OpError;
use crate::event::Kind;
use crate::referral::{is_referral, referral_for};

/// Below this many bytes of stored values, the general path is as cheap: the attribute is decoded.
pub const SPLICE_MIN_BYTES: usize = 64 * 1024;

/// Modifies done by splicing since the process started (for tests and the logs).
static SPLICED: AtomicU64 = AtomicU64::new(0);

/// How many modifies took the splice path in this process.
pub fn spliced_modifies() -> u64 {
    SPLICED.load(Ordering::Relaxed)
}

impl Directory {
    /// The modify of the stored entry `id` by splicing, Some once done; None, with nothing read but
    /// the entry and the index and nothing written, when the modify does not qualify and takes the
    /// general path.
    pub(super) fn modify_spliced(
        &self,
        txn: &mut WriteTxn<'_>,
        id: u64,
        dn: &Dn,
        changes: &[Change],
        ctx: Ctx<'_>,
    ) -> Result<Option<()>, OpError> {
        let Some(at) = self.splice_type(changes, ctx) else {
            return Ok(None);
        };
        let schema = self.schema();
        let name = at.name().to_string();
        let bytes = txn
            .get_entry(id)
            .map_err(failed)?
            .ok_or_else(|| LdapError::new(ResultCode::Other, "dn2id points to a missing entry"))?;
        let stored = Directory::parse_stored(bytes)?;
        // The attribute must be stored once, under its canonical name without options, in the user
        // section, and large: anything else is the general path's.
        let mut large = false;
        for (index, section) in [stored.user, stored.secret, stored.operational]
            .iter()
            .enumerate()
        {
            for span in attribute_spans(section) {
                let Ok((desc, _, set)) = span else {
                    return Ok(None);
                };
                let type_name = desc.split(';').next().unwrap_or(desc);
                if !at.is_named(type_name) {
                    continue;
                }
                if index != 0 || desc != name || large || set.len() < SPLICE_MIN_BYTES {
                    return Ok(None);
                }
                large = true;
            }
        }
        if !large {
            return Ok(None);
        }
        let unreadable = |e| {
            tracing::error!(error = %e, "corrupt entry");
            LdapError::new(ResultCode::Other, "stored entry is unreadable")
        };
        let (old, Some((at_index, set))) = stored.to_entry_without(&name).map_err(unreadable)?
        else {
            return Ok(None);
        };
        let absent = self.absent_adds(txn, id, &old, changes)?;
        if absent.len() != changes.len() {
            return Ok(None);
        }
        // Where the old values lie in the stored value: the write keeps that range as it is.
        let start = (set.as_ptr() as usize)
            .checked_sub(bytes.as_ptr() as usize)
            .filter(|start| start + set.len() <= bytes.len())
            .ok_or_else(|| LdapError::new(ResultCode::Other, "splice: values outside the entry"))?;
        let keep = start..start + set.len();

        // From here on, back-mdb's order as in the general path; the referral check reads the entry
        // already parsed (a large value is put together from its chunks once per read).
        if !ctx.guard.manage_dsa_it() && is_referral(&stored) {
            return Err(referral_for(&stored, dn, 0, None, None).into());
        }
        ctx.guard
            .before_change(self, crate::InWrite::new(txn), Some(id), &old)?;
        ctx.guard.authorize(
            self,
            crate::InWrite::new(txn),
            Action::Modify(&old, changes),
        )?;
        let mut new = old.clone();
        let added: Vec<Vec<u8>> = changes
            .iter()
            .flat_map(|c| c.modification.values.iter().cloned())
            .collect();
        new.attrs.insert(
            at_index,
            Attribute {
                desc: name.clone(),
                values: added,
            },
        );
        check_entry(schema, &new)?;
        let kind = Kind::Modify;
        self.hooks_prepare(txn, ctx.by(), kind, id, Some(&old), Some(&mut new), changes)?;
        let mut out = Vec::with_capacity(4096);
        let hole = if new.attrs.iter().any(|a| a.desc == name) {
            encode_entry_spliced(schema, &new, Some((&name, keep.len())), &mut out)
        } else {
            // A hook took every added value back: the old values stay, where they stood.
            let mut kept = new.clone();
            kept.attrs.insert(
                at_index.min(kept.attrs.len()),
                Attribute {
                    desc: name.clone(),
                    values: Vec::new(),
                },
            );
            encode_entry_spliced(schema, &kept, Some((&name, keep.len())), &mut out)
        };
        let hole =
            hole.ok_or_else(|| LdapError::new(ResultCode::Other, "splice: attribute lost"))?;
        let (head, tail) = out.split_at(hole);
        txn.splice_entry(id, head, keep, tail).map_err(failed)?;
        // Index keys of the difference: the added values, and what hooks changed.
        self.reindex(txn, id, Some(&old), Some(&new))?;
        self.hooks_commit(txn, ctx.by(), kind, id, Some(&old), Some(&new), changes)?;
        ctx.guard
            .after_change(self, crate::InWrite::new(txn), id, &new.dn);
        SPLICED.fetch_add(1, Ordering::Relaxed);
        Ok(Some(()))
    }

    /// The attribute type a modify only adds values to, when the modify, the requester's guard and
    /// the pipeline allow the splice path.
    fn splice_type(&self, changes: &[Change], ctx: Ctx<'_>) -> Option<&AttributeType> {
        if !ctx.guard.authorizes_without_values() || !self.pipeline().accepts_partial() {
            return None;
        }
        let schema = self.schema();
        let mut at: Option<&AttributeType> = None;
        for change in changes {
            let name = &change.modification.name;
            if change.operation != ModifyOperation::Add
                || change.modification.values.is_empty()
                || name.contains(';')
            {
                return None;
            }
            let this = schema.attribute_type(name)?;
            match at {
                Some(first) if !std::ptr::eq(first, this) => return None,
                _ => at = Some(this),
            }
        }
        let at = at?;
        if at.has_subtypes()
            || at.equality.is_none()
            || at.oid == OBJECT_CLASS
            || at.single_value
            || at.is_operational()
            || section_of(schema, at.name()) != Section::User
        {
            return None;
        }
        // An index on a supertype takes keys from several attributes: keys that a hook's changes
        // remove could still come from this attribute's values, which the partial entries lack.
        for spec in self.maintained_indexes().iter() {
            let indexed = schema.attribute_type(&spec.attr)?;
            if !std::ptr::eq(indexed, at) && schema.is_subtype_of(at, indexed) {
                return None;
            }
        }
        Some(at)
    }
}
