//! `set=` and `set.expand=` `<who>` clauses: slapd's set language (`canopy_core::sets`, shared with
//! the constraint overlay) parsed once at configuration load, evaluated per check over the access
//! list's group reader with the language's bounds on its work.

use canopy_core::sets::{self, SetContext, SetExpr, SetFailure, SetReader};
use canopy_core::{Entry, LdapError};
use canopy_schema::{NormDn, Schema};

use super::Groups;

/// A `set[.style]=` clause.
#[derive(Debug)]
pub struct SetClause {
    /// The pattern as written.
    pub text: String,
    /// `set.expand` (or slapd's deprecated `set.regex`): `$N` references filled in per entry from
    /// the rule's `<what>` DN match before parsing.
    pub expand: bool,
    /// The parsed expression (for `expand`, the pattern with every reference left empty, as checked).
    expr: SetExpr,
    /// Whether the expression depends on the entry (`this`, or references to fill in).
    pub per_entry: bool,
    /// Whether it reads attributes of the entry (`this/...`): checks then need the entry.
    pub reads_this: bool,
}

impl SetClause {
    /// Compiles `set[.style]=<pattern>`; `style` is empty, `exact`, `base`, `expand` or `regex`.
    pub fn new(schema: &Schema, style: &str, text: &str) -> Result<SetClause, String> {
        let expand = match style.to_ascii_lowercase().as_str() {
            "" | "exact" | "base" | "baseobject" => false,
            "expand" | "regex" => true,
            _ => return Err("inappropriate set style (exact or expand)".into()),
        };
        if text.is_empty() {
            return Err("no set is defined".into());
        }
        let checked = if expand {
            super::expand::substitute(text, &[]).ok_or("bad $ reference")?
        } else {
            text.to_string()
        };
        let expr = sets::parse(schema, &checked).map_err(|why| format!("bad set ({why})"))?;
        Ok(SetClause {
            text: text.to_string(),
            expand,
            per_entry: expand || expr.mentions_this(),
            reads_this: expr.reads_this(),
            expr,
        })
    }

    /// Evaluates the clause: `expanded` is the pattern filled in for the entry (`expand` only).
    pub fn evaluate(
        &self,
        ctx: &SetContext<'_>,
        expanded: Option<&str>,
    ) -> Result<Vec<Vec<u8>>, SetFailure> {
        match expanded {
            Some(text) if self.expand => {
                let expr = sets::parse(ctx.schema, text).map_err(SetFailure::Syntax)?;
                expr.evaluate(ctx)
            }
            _ => self.expr.evaluate(ctx),
        }
    }
}

/// The access list's group reader as the set language reads entries: without access control, and
/// without URL searches (an `ldap:///` element finds nothing here).
pub struct ViaGroups<'g>(pub &'g dyn Groups);

impl SetReader for ViaGroups<'_> {
    fn entry(&self, ndn: &NormDn) -> Result<Option<Entry>, LdapError> {
        Ok(self.0.entry(ndn))
    }
}

#[cfg(test)]
#[path = "sets_tests.rs"]
mod tests;
