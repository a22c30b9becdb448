//! Entries that have been through access control: the only forms of an entry the encoders accept, and
//! only this module makes them.
//!
//! A search sends a [`Cleared`] stored entry (with the rights its attributes are read under); the
//! assertion, compare and read-entry controls use a [`Seen`] entry (the attributes the requester holds
//! a privilege on). Neither can be built outside `acl`, so no code path can encode an entry that skipped
//! the checks.

use canopy_core::wire::StoredEntry;
use canopy_core::{Attribute, Entry};
use canopy_directory::View;

use super::ops::retain_allowed;
use super::view::{EntryView, SearchAccess};
use super::{privileges, Guarded, Mask};
use crate::access::Who;

/// A stored entry a search may send, and the rights its attributes are read under.
pub struct Cleared<'e, 'r> {
    stored: &'r StoredEntry<'e>,
    rights: Option<(&'r SearchAccess<'r>, &'r EntryView)>,
}

impl<'e, 'r> Cleared<'e, 'r> {
    pub fn stored(&self) -> &'r StoredEntry<'e> {
        self.stored
    }

    /// The search's access and the entry's view; None for the root DN, who reads everything.
    pub fn rights(&self) -> Option<(&'r SearchAccess<'r>, &'r EntryView)> {
        self.rights
    }
}

impl<'a> SearchAccess<'a> {
    /// `stored` cleared to be sent when its view grants `read` on the entry; `view` is None only for
    /// the root DN (checked here).
    pub fn clear<'e, 'r>(
        &'r self,
        stored: &'r StoredEntry<'e>,
        view: Option<&'r EntryView>,
    ) -> Option<Cleared<'e, 'r>>
    where
        'a: 'r,
    {
        match view {
            None if self.is_root() => Some(Cleared {
                stored,
                rights: None,
            }),
            None => None,
            Some(view) if view.allows_entry(privileges::READ) => Some(Cleared {
                stored,
                rights: Some((self, view)),
            }),
            Some(_) => None,
        }
    }
}

/// An entry with the attributes (computed ones too) its requester holds a privilege on.
pub struct Seen {
    entry: Entry,
    computed: Vec<Attribute>,
}

impl Seen {
    /// `entry` and its `computed` attributes as `who` sees them with `need`: the rest are removed.
    pub fn through<T: View>(
        db: &impl Guarded,
        txn: &T,
        who: &Who,
        mut entry: Entry,
        mut computed: Vec<Attribute>,
        need: Mask,
    ) -> Seen {
        if !who.root {
            let full = entry.clone();
            retain_allowed(db, txn, who, &mut entry, need);
            let mut with_computed = Entry {
                attrs: std::mem::take(&mut computed),
                ..full
            };
            retain_allowed(db, txn, who, &mut with_computed, need);
            computed = with_computed.attrs;
        }
        Seen { entry, computed }
    }

    /// An entry about to be added as `who` sees it: the attributes it may read, and the computed
    /// attributes the new entry will have.
    pub fn proposed<T: View>(
        db: &impl Guarded,
        txn: &T,
        who: &Who,
        mut entry: Entry,
        computed: Vec<Attribute>,
    ) -> Seen {
        retain_allowed(db, txn, who, &mut entry, privileges::READ);
        Seen { entry, computed }
    }

    /// An entry the server makes for everyone (the root DSE, cn=Subschema), which no rule restricts.
    pub fn public(entry: Entry) -> Seen {
        Seen {
            entry,
            computed: Vec::new(),
        }
    }

    /// Drops computed attributes `drop` names (narrowing what is seen never breaks a rule).
    pub fn drop_computed(&mut self, drop: impl Fn(&Attribute) -> bool) {
        self.computed.retain(|a| !drop(a));
    }

    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    pub fn computed(&self) -> &[Attribute] {
        &self.computed
    }
}
