//! The attribute types and object classes of RFC 4512 §4.1 as resolved by the loader, and their
//! description strings (syntaxes are in `syntax.rs`).

use crate::definition::{push_desc, push_extensions, push_names, push_oids};
use crate::matching::MatchingRule;

/// RFC 4512 AttributeUsage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Usage {
    UserApplications,
    DirectoryOperation,
    DistributedOperation,
    DsaOperation,
}

impl Usage {
    pub(crate) fn keyword(self) -> &'static str {
        match self {
            Usage::UserApplications => "userApplications",
            Usage::DirectoryOperation => "directoryOperation",
            Usage::DistributedOperation => "distributedOperation",
            Usage::DsaOperation => "dSAOperation",
        }
    }

    pub(crate) fn from_keyword(s: &str) -> Option<Usage> {
        [
            Usage::UserApplications,
            Usage::DirectoryOperation,
            Usage::DistributedOperation,
            Usage::DsaOperation,
        ]
        .into_iter()
        .find(|u| u.keyword().eq_ignore_ascii_case(s))
    }
}

/// RFC 4512 ObjectClassDescription kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectClassKind {
    Abstract,
    Structural,
    Auxiliary,
}

/// The parts of an attribute type written in its own definition (the rest is inherited), so that
/// `definition()` prints what was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    pub equality: bool,
    pub ordering: bool,
    pub substr: bool,
    /// The SYNTAX as written, with its `{len}` bound, when given.
    pub syntax: Option<String>,
}

/// A resolved attribute type; matching rules and syntax are the effective ones (inherited from SUP).
#[derive(Clone, Debug)]
pub struct AttributeType {
    pub oid: String,
    /// As written in the definition; `names[0]` is canonical.
    pub names: Vec<String>,
    pub desc: Option<String>,
    pub obsolete: bool,
    /// Canonical name of the direct supertype.
    pub sup: Option<String>,
    pub equality: Option<MatchingRule>,
    pub ordering: Option<MatchingRule>,
    pub substr: Option<MatchingRule>,
    /// Effective syntax OID, without `{len}`.
    pub syntax: String,
    pub single_value: bool,
    pub collective: bool,
    pub no_user_modification: bool,
    pub usage: Usage,
    /// `X-` extensions in definition order, e.g. `("X-ORDERED", ["VALUES"])`.
    pub extensions: Vec<(String, Vec<String>)>,
    pub(crate) declared: Declared,
    /// The syntax whose validator checks values: `syntax`, or what a loaded `ldapsyntax` names in its
    /// `X-SUBST` for a syntax this crate has no validator of.
    pub(crate) check_syntax: String,
    /// The validator of `check_syntax`, looked up once when the type is added.
    pub(crate) check: Option<crate::syntax::Check>,
    /// Whether some type names this one as its SUP (set when that type is added).
    pub(crate) has_subtypes: bool,
    /// Position of the type in its schema, set when the schema takes it: what
    /// [`ObjectClass::allows`] looks up.
    pub(crate) position: u32,
    /// Position of the direct supertype in the same schema, resolved when the type is added (a SUP
    /// must be defined first): [`crate::Schema::is_subtype_of`] walks the chain without name lookups.
    pub(crate) sup_position: Option<u32>,
}

impl AttributeType {
    /// `names[0]`, or the OID when the type has no name.
    pub fn name(&self) -> &str {
        self.names.first().map_or(self.oid.as_str(), String::as_str)
    }

    /// Whether `name_or_oid` names this type (any of its names in any case, or its OID), without a
    /// schema lookup: what MUST and MAY lists hold.
    pub fn is_named(&self, name_or_oid: &str) -> bool {
        self.oid == name_or_oid
            || self
                .names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(name_or_oid))
    }

    /// Whether another type of the schema is a subtype of this one. When not, only attributes named
    /// [`is_named`](Self::is_named) are of this type, without a schema lookup.
    pub fn has_subtypes(&self) -> bool {
        self.has_subtypes
    }

    pub fn is_operational(&self) -> bool {
        self.usage != Usage::UserApplications
    }

    /// Syntax check of one value; values of unknown syntaxes are accepted.
    pub fn validate(&self, value: &[u8]) -> bool {
        crate::syntax::validate_with(self.check, value)
    }

    /// RFC 4512 AttributeTypeDescription.
    pub fn definition(&self) -> String {
        let mut out = format!("( {}", self.oid);
        push_names(&mut out, &self.names);
        push_desc(&mut out, self.desc.as_deref());
        if self.obsolete {
            out.push_str(" OBSOLETE");
        }
        if let Some(sup) = &self.sup {
            out.push_str(" SUP ");
            out.push_str(sup);
        }
        for (declared, keyword, rule) in [
            (self.declared.equality, "EQUALITY", self.equality),
            (self.declared.ordering, "ORDERING", self.ordering),
            (self.declared.substr, "SUBSTR", self.substr),
        ] {
            if let (true, Some(rule)) = (declared, rule) {
                out.push_str(&format!(" {keyword} {}", rule.name()));
            }
        }
        if let Some(syntax) = &self.declared.syntax {
            out.push_str(" SYNTAX ");
            out.push_str(syntax);
        }
        for (flag, keyword) in [
            (self.single_value, " SINGLE-VALUE"),
            (self.collective, " COLLECTIVE"),
            (self.no_user_modification, " NO-USER-MODIFICATION"),
        ] {
            if flag {
                out.push_str(keyword);
            }
        }
        if self.usage != Usage::UserApplications {
            out.push_str(" USAGE ");
            out.push_str(self.usage.keyword());
        }
        push_extensions(&mut out, &self.extensions);
        out.push_str(" )");
        out
    }

    /// Whether two definitions say the same thing (descriptions and extensions aside), so that loading
    /// a file that repeats a built-in definition is harmless.
    pub(crate) fn same_as(&self, other: &AttributeType) -> bool {
        self.oid == other.oid
            && same_names(&self.names, &other.names)
            && eq_ignore_case_opt(self.sup.as_deref(), other.sup.as_deref())
            && self.equality == other.equality
            && self.ordering == other.ordering
            && self.substr == other.substr
            && self.syntax == other.syntax
            && self.single_value == other.single_value
            && self.collective == other.collective
            && self.no_user_modification == other.no_user_modification
            && self.usage == other.usage
    }
}

/// A resolved object class.
#[derive(Clone, Debug)]
pub struct ObjectClass {
    pub oid: String,
    pub names: Vec<String>,
    pub desc: Option<String>,
    pub obsolete: bool,
    /// Canonical names of the direct superclasses.
    pub sup: Vec<String>,
    pub kind: ObjectClassKind,
    /// Canonical attribute names required by this class itself (not inherited).
    pub must: Vec<String>,
    pub may: Vec<String>,
    pub extensions: Vec<(String, Vec<String>)>,
    /// Positions in the schema of the MUST and MAY types of this class itself, sorted.
    pub(crate) allowed: Vec<u32>,
}

impl ObjectClass {
    /// Whether this class itself (not its superclasses) lists `at` in MUST or MAY; `at` must come from
    /// the schema this class belongs to.
    pub fn allows(&self, at: &AttributeType) -> bool {
        self.allowed.binary_search(&at.position).is_ok()
    }

    pub fn name(&self) -> &str {
        self.names.first().map_or(self.oid.as_str(), String::as_str)
    }

    /// RFC 4512 ObjectClassDescription.
    pub fn definition(&self) -> String {
        let mut out = format!("( {}", self.oid);
        push_names(&mut out, &self.names);
        push_desc(&mut out, self.desc.as_deref());
        if self.obsolete {
            out.push_str(" OBSOLETE");
        }
        push_oids(&mut out, "SUP", &self.sup);
        out.push_str(match self.kind {
            ObjectClassKind::Abstract => " ABSTRACT",
            ObjectClassKind::Structural => " STRUCTURAL",
            ObjectClassKind::Auxiliary => " AUXILIARY",
        });
        push_oids(&mut out, "MUST", &self.must);
        push_oids(&mut out, "MAY", &self.may);
        push_extensions(&mut out, &self.extensions);
        out.push_str(" )");
        out
    }

    pub(crate) fn same_as(&self, other: &ObjectClass) -> bool {
        self.oid == other.oid
            && same_names(&self.names, &other.names)
            && same_names(&self.sup, &other.sup)
            && self.kind == other.kind
            && same_names(&self.must, &other.must)
            && same_names(&self.may, &other.may)
    }
}

fn same_names(a: &[String], b: &[String]) -> bool {
    let mut a: Vec<String> = a.iter().map(|s| s.to_ascii_lowercase()).collect();
    let mut b: Vec<String> = b.iter().map(|s| s.to_ascii_lowercase()).collect();
    a.sort();
    a.dedup();
    b.sort();
    b.dedup();
    a == b
}

fn eq_ignore_case_opt(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        (None, None) => true,
        _ => false,
    }
}
