//! LDAP schema (RFC 4512): definitions and their parser, syntaxes, matching rules and the built-in schemas.
//!
//! `Schema::builtin()` gives the standard user and operational schema; OpenLDAP `.schema` and `.ldif`
//! files load on top of it. Matching rules normalize values so that equality is byte equality of normal
//! forms, which is what indexes and DN keys (`NormDn`) rely on.
//!
//! Owns: the schema model, syntaxes, matching rules, DN normalization. Must never: read the store or the
//! configuration, or do I/O beyond loading the schema files it is given.

pub mod authz;
mod certificate;
mod definition;
mod dn;
mod error;
mod matching;
mod model;
mod norm_dn;
mod parse;
mod prep;
mod schema;
mod syntax;
mod values;
pub mod x509;

#[cfg(test)]
mod tests;

pub use error::{InvalidValue, SchemaError};
pub use matching::{MatchKind, MatchingRule};
pub use model::{AttributeType, ObjectClass, ObjectClassKind, Usage};
pub use norm_dn::NormDn;
pub use schema::{Schema, BUILTIN_FILES};
pub use syntax::Syntax;
