//! The databases of one server and the one place that routes a DN to its database (longest suffix),
//! with each database's frontend settings (access rules) beside its backend.
//!
//! Every operation finds its database here; cn=config and cn=Monitor become databases of their own in
//! this registry. The root DSE and cn=Subschema are answered by `special` before routing.

use std::ops::Deref;
use std::sync::Arc;

use canopy_core::LdapError;
use canopy_directory::{Action, Directory, Guard, WriteOp, WriteRequest};
use canopy_mdb::WriteTxn;
use canopy_proto::{Dn, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::access::Who;
use crate::acl::ops::{check_add, check_delete, check_modify, check_rename, hide_matched};
use crate::acl::{Acl, Guarded};

/// One database as the frontend sees it: the backend and the access rules that guard it.
#[derive(Clone)]
pub struct Database {
    backend: Directory,
    acl: Arc<Acl>,
    /// Clients may not write it (cn=Monitor): every update is unwillingToPerform.
    read_only: bool,
}

impl Database {
    pub fn new(backend: Directory, acl: Acl) -> Database {
        Database {
            backend,
            acl: Arc::new(acl),
            read_only: false,
        }
    }

    /// A database the server writes itself and clients only read (cn=Monitor).
    pub fn read_only(backend: Directory, acl: Acl) -> Database {
        Database {
            read_only: true,
            ..Database::new(backend, acl)
        }
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub fn backend(&self) -> &Directory {
        &self.backend
    }

    pub fn acl(&self) -> &Acl {
        &self.acl
    }

    /// Runs a write by `who` in this database (access checked inside the write's transaction) and
    /// returns once it is durable.
    pub async fn update(&self, op: WriteOp, who: &Who) -> Result<(), LdapError> {
        if self.read_only {
            return Err(LdapError::new(
                ResultCode::UnwillingToPerform,
                "operation not supported within namingContext",
            ));
        }
        let guard = self.guard(who);
        self.backend.write(WriteRequest { op, guard }).await
    }

    /// The guard a write by `who` carries into the writer thread: these access rules, for that identity.
    pub fn guard(&self, who: &Who) -> Arc<dyn Guard> {
        Arc::new(AccessGuard {
            db: self.clone(),
            who: who.clone(),
        })
    }
}

impl Guarded for Database {
    fn acl(&self) -> &Acl {
        &self.acl
    }
}

/// A database is used through its backend's reads (schema, lookups, snapshots).
impl Deref for Database {
    type Target = Directory;

    fn deref(&self) -> &Directory {
        &self.backend
    }
}

/// Every database of the server, in configuration order.
pub struct Databases {
    list: Vec<Database>,
}

impl Databases {
    /// The registry of `list`; the first is the default database. Panics on an empty list, which
    /// configuration loading never produces.
    pub fn new(list: Vec<Database>) -> Databases {
        assert!(!list.is_empty(), "a server has at least one database");
        Databases { list }
    }

    /// The database holding `ndn`: the one with the longest suffix that is a suffix of `ndn`.
    pub fn route(&self, ndn: &NormDn) -> Option<&Database> {
        self.list
            .iter()
            .filter(|db| db.holds(ndn))
            .max_by_key(|db| db.suffix().rdns().len())
    }

    /// The first configured database.
    pub fn first(&self) -> &Database {
        // `new` refuses an empty list.
        &self.list[0]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Database> {
        self.list.iter()
    }

    /// The schema every database shares.
    pub fn schema(&self) -> &Arc<Schema> {
        self.first().schema()
    }

    /// Parses and normalizes a DN from a request, with slapd's result codes (the schema is shared, so
    /// any database normalizes alike).
    pub fn normalize(&self, raw: &[u8]) -> Result<(Dn, NormDn), LdapError> {
        self.first().normalize(raw)
    }
}

/// Access control inside the writer's transaction: the checks of `acl::ops` for one identity.
struct AccessGuard {
    db: Database,
    who: Who,
}

impl Guard for AccessGuard {
    fn requester(&self) -> &str {
        &self.who.dn
    }

    fn authorize(
        &self,
        _dir: &Directory,
        txn: &WriteTxn<'_>,
        action: Action<'_>,
    ) -> Result<(), LdapError> {
        let (db, who) = (&self.db, &self.who);
        match action {
            Action::Add(entry) => check_add(db, txn, who, entry),
            Action::Delete(entry) => check_delete(db, txn, who, entry),
            Action::Modify(entry, changes) => check_modify(db, txn, who, entry, changes),
            Action::Rename {
                entry,
                new_parent,
                rdn_attrs,
            } => check_rename(db, txn, who, entry, new_parent, rdn_attrs),
        }
    }

    fn conceal(&self, _dir: &Directory, txn: &WriteTxn<'_>, error: LdapError) -> LdapError {
        hide_matched(&self.db, txn, &self.who, error)
    }
}
