//! The `set` constraint: slapd's set language (`canopy_core::sets`, shared with ACL `set=` clauses)
//! evaluated inside the write's transaction, with `this` the entry as it will be stored and `user`
//! the requester; the constraint holds when the set is not empty. Entries are read in the write's
//! transaction within this database, and `[ldap:///...]` elements are searched there as the
//! constraint's other URLs are (no access control).

use canopy_core::desc::AttrDesc;
use canopy_core::sets::{self, SetContext, SetExpr, SetFailure, SetReader};
use canopy_core::{Entry, LdapError};
use canopy_mdb::WriteTxn;
use canopy_schema::{NormDn, Schema};

use super::parse::{self, LdapUrl};
use crate::database::Directory;

/// A parsed set expression.
#[derive(Debug, Clone)]
pub(crate) struct Expr(SetExpr);

impl Expr {
    /// Parses the expression's syntax; names are checked against the schema by [`Expr::check`].
    pub(crate) fn parse(text: &str) -> Result<Expr, String> {
        sets::parse_syntax(text).map(Expr)
    }

    /// Checks what the schema and the database decide: attribute names, and the URLs the expression
    /// chases (their base must be in this database: Canopy serves one).
    pub(crate) fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        for (attr, of) in self.0.steps() {
            let desc = &attr.text;
            AttrDesc::parse(schema, desc)
                .map_err(|e| format!("attribute {desc:?}: {}", e.message))?;
            if let Some(text) = of.filter(|text| sets::is_url(text)) {
                let text = String::from_utf8_lossy(text);
                let url = parse::url(&text).map_err(|e| format!("{text:?}: {e}"))?;
                super::search_base(schema, suffix, &url.dn)
                    .map_err(|e| format!("{text:?}: {e}"))?;
            }
        }
        self.0.check(schema)
    }

    /// Whether the set is not empty. An evaluation that gives up (too large, too many reads, `user`
    /// for an anonymous requester) does not hold, as slapd's failed set does not; a storage error is
    /// the write's error.
    pub(crate) fn holds(&self, world: &World<'_, '_>) -> Result<bool, LdapError> {
        let user = match world.user {
            "" => None,
            dn => world.dir.normalize(dn.as_bytes()).ok().map(|(_, ndn)| ndn),
        };
        let ctx = SetContext {
            schema: world.dir.schema(),
            user: user.as_ref(),
            this: &world.this.ndn,
            this_entry: Some(world.this),
            reader: world,
        };
        match self.0.evaluate(&ctx) {
            Ok(set) => Ok(!set.is_empty()),
            Err(SetFailure::Read(e)) => Err(e),
            Err(failure) => {
                tracing::debug!(%failure, "constraint: a set gave up and does not hold");
                Ok(false)
            }
        }
    }
}

/// What an expression is evaluated against.
pub(crate) struct World<'a, 't> {
    pub dir: &'a Directory,
    pub txn: &'a WriteTxn<'t>,
    /// The entry as it will be stored: `this`, and the entry read for its own DN.
    pub this: &'a Entry,
    /// The requester's DN as bound (empty for anonymous): `user`, normalized.
    pub user: &'a str,
}

impl SetReader for World<'_, '_> {
    fn entry(&self, ndn: &NormDn) -> Result<Option<Entry>, LdapError> {
        if !self.dir.holds(ndn) {
            return Ok(None);
        }
        Ok(crate::overlay::load(self.txn, ndn)?.map(|(_, entry)| entry))
    }

    /// The URL's search in the write's transaction: none when it does not parse or its base is not in
    /// this database.
    fn search(&self, url: &str, found: &mut dyn FnMut(&Entry) -> bool) -> Result<(), LdapError> {
        let Ok(LdapUrl {
            dn, scope, filter, ..
        }) = parse::url(url)
        else {
            return Ok(());
        };
        let Ok(base) = super::search_base(self.dir.schema(), self.dir.suffix(), &dn) else {
            return Ok(());
        };
        let filter = filter.unwrap_or_else(super::every_entry);
        super::search::each(self.dir, self.txn, &base, scope, &filter, found)
    }
}
