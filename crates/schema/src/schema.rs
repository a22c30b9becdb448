//! The schema: lookup tables, loading of definitions with reference resolution, and the built-in set.

use crate::error::SchemaError;
use crate::matching::MatchingRule;
use crate::model::{AttributeType, Declared, ObjectClass, Usage};
use crate::parse::{self, DescError, Directive, Statement};
use crate::syntax::Syntax;
use crate::values::{is_descr, is_numeric_oid};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::OnceLock;

/// The built-in definitions, loaded in this order (each file may use what the ones before define).
const BUILTIN: &[(&str, &str)] = &[
    ("builtin:core.schema", include_str!("../schema/core.schema")),
    (
        "builtin:operational.schema",
        include_str!("../schema/operational.schema"),
    ),
    (
        "builtin:cosine.schema",
        include_str!("../schema/cosine.schema"),
    ),
    (
        "builtin:inetorgperson.schema",
        include_str!("../schema/inetorgperson.schema"),
    ),
    ("builtin:nis.schema", include_str!("../schema/nis.schema")),
    (
        "builtin:dyngroup.schema",
        include_str!("../schema/dyngroup.schema"),
    ),
];

/// The built-in schema files a configuration may name as slapd's `include` of them (its
/// `cn={N}NAME,cn=schema,cn=config` children): all of them are always loaded.
pub const BUILTIN_FILES: [&str; 5] = ["core", "cosine", "inetorgperson", "nis", "dyngroup"];

/// userPassword's OID (RFC 4519 §2.41).
const USER_PASSWORD_OID: &str = "2.5.4.35";

/// A set of attribute types and object classes with lookup by any name or OID.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    attributes: Vec<AttributeType>,
    /// Lower-case names and OIDs to indexes in `attributes`.
    attribute_index: NameIndex,
    classes: Vec<ObjectClass>,
    class_index: NameIndex,
    syntaxes: Vec<Syntax>,
    /// `objectidentifier` macros: lower-case name to numeric OID.
    oid_macros: HashMap<String, String>,
    /// The position of userPassword in `attributes`, asked for on every search and write.
    user_password: Option<usize>,
}

/// Where a statement's problem is, for error messages.
struct Place<'a> {
    origin: &'a str,
    statement: &'a Statement,
}

impl Place<'_> {
    fn error_at(&self, offset: usize, reason: impl Into<String>) -> SchemaError {
        SchemaError::Parse {
            origin: self.origin.to_string(),
            line: self.statement.line_of(offset),
            reason: reason.into(),
        }
    }

    fn error(&self, reason: impl Into<String>) -> SchemaError {
        self.error_at(0, reason)
    }

    fn desc_error(&self, e: DescError) -> SchemaError {
        self.error_at(e.offset, e.reason)
    }

    fn duplicate(&self, what: String) -> SchemaError {
        SchemaError::Duplicate {
            origin: self.origin.to_string(),
            line: self.statement.first_line(),
            what,
        }
    }
}

/// Names and OIDs, in any case, to positions. The keys are fixed when the schema loads, never chosen by a
/// client, so a fast non-keyed hash is safe here; lookups run several times per attribute of every entry
/// and of every search, so a lookup neither allocates nor folds the name into a copy: the hash reads the
/// name in words, each folded to ASCII lower case in a register, and the comparison with the (lower-case)
/// key folds the name byte by byte.
#[derive(Clone, Debug, Default)]
struct NameIndex {
    buckets: HashMap<u64, Bucket, BuildHasherDefault<PassHasher>>,
}

/// The names of one hash: almost always one.
#[derive(Clone, Debug)]
enum Bucket {
    One(Box<[u8]>, usize),
    Many(Vec<(Box<[u8]>, usize)>),
}

impl NameIndex {
    fn get(&self, name: &str) -> Option<usize> {
        let name = name.as_bytes();
        match self.buckets.get(&folded_hash(name))? {
            Bucket::One(key, index) => same_folded(key, name).then_some(*index),
            Bucket::Many(keys) => keys
                .iter()
                .find(|(key, _)| same_folded(key, name))
                .map(|(_, index)| *index),
        }
    }

    /// Adds `name` (kept in lower case); an existing entry for the same name is replaced.
    fn insert(&mut self, name: &str, index: usize) {
        let key: Box<[u8]> = name.to_ascii_lowercase().into_bytes().into();
        let bucket = self
            .buckets
            .entry(folded_hash(&key))
            .or_insert_with(|| Bucket::Many(Vec::new()));
        let mut keys = match std::mem::replace(bucket, Bucket::Many(Vec::new())) {
            Bucket::One(k, i) => vec![(k, i)],
            Bucket::Many(keys) => keys,
        };
        match keys.iter_mut().find(|(k, _)| *k == key) {
            Some(existing) => existing.1 = index,
            None => keys.push((key, index)),
        }
        *bucket = match keys.len() {
            1 => {
                let (k, i) = keys.remove(0);
                Bucket::One(k, i)
            }
            _ => Bucket::Many(keys),
        };
    }
}

/// Eight bytes of `name` from `at`, little-endian (0 past the end, which callers never ask for).
fn read8(name: &[u8], at: usize) -> u64 {
    name.get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Four bytes of `name` from `at`, little-endian.
fn read4(name: &[u8], at: usize) -> u64 {
    name.get(at..at + 4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
}

/// Visits words that together cover every byte of `name` (the last one overlapping the one before
/// it, short names read as two overlapping halves), chosen by the length alone, so that two names of
/// the same length are equal exactly when all their words are; stops at the first `false`.
fn all_words(name: &[u8], mut visit: impl FnMut(u64) -> bool) -> bool {
    let len = name.len();
    match len {
        0 => visit(0),
        1..=3 => {
            let byte = |i: usize| u64::from(name.get(i).copied().unwrap_or(0));
            visit(byte(0) | (byte(len / 2) << 8) | (byte(len - 1) << 16))
        }
        4..=8 => visit(read4(name, 0) | (read4(name, len - 4) << 32)),
        _ => {
            let mut at = 0;
            while at + 8 < len {
                if !visit(read8(name, at)) {
                    return false;
                }
                at += 8;
            }
            visit(read8(name, len - 8))
        }
    }
}

/// ASCII upper-case letters of a word to lower case (SWAR: no byte carries into the next).
fn lower_word(word: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let low7 = word & !HIGH;
    // The high bit of a byte is set where the byte is at least 'A', resp. greater than 'Z'.
    let at_least_a = low7.wrapping_add(0x3f3f_3f3f_3f3f_3f3f);
    let beyond_z = low7.wrapping_add(0x2525_2525_2525_2525);
    let upper = at_least_a & !beyond_z & !word & HIGH;
    word | (upper >> 2)
}

/// FxHash-style word-at-a-time hashing (the multiply-rotate of rustc's FxHasher) of the name folded to
/// ASCII lower case, then a final mix for hashbrown's use of the low and high bits.
fn folded_hash(name: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut hash = name.len() as u64;
    all_words(name, |word| {
        hash = (hash.rotate_left(5) ^ lower_word(word)).wrapping_mul(SEED);
        true
    });
    hash ^ (hash >> 29)
}

/// Whether `name` folded to ASCII lower case is `key` (already in lower case): the words of
/// `all_words` compared, since they cover every byte.
fn same_folded(key: &[u8], name: &[u8]) -> bool {
    let len = key.len();
    if name.len() != len {
        return false;
    }
    match len {
        0..=3 => key
            .iter()
            .zip(name)
            .all(|(k, n)| *k == n.to_ascii_lowercase()),
        4..=8 => {
            read4(key, 0) == lower_word(read4(name, 0))
                && read4(key, len - 4) == lower_word(read4(name, len - 4))
        }
        _ => {
            let mut at = 0;
            while at + 8 < len {
                if read8(key, at) != lower_word(read8(name, at)) {
                    return false;
                }
                at += 8;
            }
            read8(key, len - 8) == lower_word(read8(name, len - 8))
        }
    }
}

/// The map of folded hashes takes them as they are.
#[derive(Default, Clone, Copy)]
struct PassHasher(u64);

impl Hasher for PassHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8) | u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Schema {
    /// An empty schema that knows the syntaxes and matching rules but defines nothing.
    pub fn empty() -> Schema {
        Schema {
            syntaxes: crate::syntax::known_syntaxes(),
            ..Schema::default()
        }
    }

    /// core (RFC 4512/4519), cosine (RFC 4524), inetOrgPerson (RFC 2798), nis (RFC 2307) and the
    /// operational attributes of a slapd.
    pub fn builtin() -> Schema {
        static BUILTIN_SCHEMA: OnceLock<Schema> = OnceLock::new();
        BUILTIN_SCHEMA
            .get_or_init(|| {
                let mut schema = Schema::empty();
                for (origin, text) in BUILTIN {
                    // The embedded text is fixed at compile time; `tests::builtin_loads` proves it.
                    if let Err(e) = schema.load_text(text, origin) {
                        panic!("built-in schema does not load: {e}");
                    }
                }
                schema
            })
            .clone()
    }

    /// The attribute types and object classes the built-in file `name` ([`BUILTIN_FILES`]) defines,
    /// as definitions in the file's order; None for any other name.
    pub fn builtin_file(name: &str) -> Option<(Vec<String>, Vec<String>)> {
        if !BUILTIN_FILES.contains(&name) {
            return None;
        }
        let origin = format!("builtin:{name}.schema");
        let mut schema = Schema::empty();
        for (file, text) in BUILTIN {
            let (types, classes) = (schema.attributes.len(), schema.classes.len());
            schema.load_text(text, file).ok()?;
            if *file == origin {
                return Some((
                    schema.attributes[types..]
                        .iter()
                        .map(|a| a.definition())
                        .collect(),
                    schema.classes[classes..]
                        .iter()
                        .map(|c| c.definition())
                        .collect(),
                ));
            }
        }
        None
    }

    /// Whether `text` is a well-formed definition of the kind `keyword` names (`attributetype`,
    /// `objectclass` or `objectidentifier`, as in a `.schema` file) whose own OID is numeric or an
    /// OID macro of this schema, whatever else it refers to; the parser's words otherwise.
    pub fn check_definition(&self, keyword: &str, text: &str) -> Result<(), String> {
        let oid = match keyword {
            "attributetype" => parse::parse_attribute_type(text).map(|raw| raw.oid),
            "objectclass" => parse::parse_object_class(text).map(|raw| raw.oid),
            "objectidentifier" => {
                return parse::parse_object_identifier(text)
                    .map(drop)
                    .map_err(|e| format!("{} (at byte {})", e.reason, e.offset))
            }
            other => return Err(format!("unknown kind of definition {other:?}")),
        }
        .map_err(|e| format!("{} (at byte {})", e.reason, e.offset))?;
        match self.expand_oid(&oid) {
            Some(_) => Ok(()),
            None => Err(format!("invalid or unknown OID \"{oid}\"")),
        }
    }

    /// Loads an OpenLDAP `.schema` file or a `.ldif` schema file. Errors name the file and line.
    pub fn load_file(&mut self, path: &Path) -> Result<(), SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Io {
            path: path.display().to_string(),
            source,
        })?;
        self.load_text(&text, &path.display().to_string())
    }

    /// Loads schema text (`.schema` or `.ldif` form, told apart by content): attribute types, object
    /// classes, OID macros and LDAP syntaxes. Nothing is changed when an error is returned. A
    /// definition identical to an existing one is ignored; any other reuse of an OID or name is a
    /// `Duplicate` error.
    pub fn load_text(&mut self, text: &str, origin: &str) -> Result<(), SchemaError> {
        let statements = parse::statements(text, origin)?;
        let mut next = self.clone();
        for statement in &statements {
            let place = Place { origin, statement };
            match statement.directive {
                Directive::ObjectIdentifier => next.add_oid_macro(&place)?,
                Directive::AttributeType => next.add_attribute_type(&place)?,
                Directive::ObjectClass => next.add_object_class(&place)?,
                Directive::LdapSyntax => next.add_syntax(&place)?,
            }
        }
        *self = next;
        Ok(())
    }

    /// Lookup by any NAME (ASCII case-insensitive) or numeric OID; no options.
    pub fn attribute_type(&self, name_or_oid: &str) -> Option<&AttributeType> {
        let index = self.attribute_index.get(name_or_oid)?;
        self.attributes.get(index)
    }

    /// Whether `at` is this schema's own type (its position names it here), not a copy from another.
    fn owns(&self, at: &AttributeType) -> bool {
        self.attributes
            .get(at.position as usize)
            .is_some_and(|own| std::ptr::eq(own, at))
    }

    /// userPassword (RFC 4519 §2.41), the type of the secret section, without a lookup by name.
    pub fn user_password(&self) -> Option<&AttributeType> {
        self.attributes.get(self.user_password?)
    }

    pub fn object_class(&self, name_or_oid: &str) -> Option<&ObjectClass> {
        let index = self.class_index.get(name_or_oid)?;
        self.classes.get(index)
    }

    pub fn attribute_types(&self) -> impl Iterator<Item = &AttributeType> {
        self.attributes.iter()
    }

    pub fn object_classes(&self) -> impl Iterator<Item = &ObjectClass> {
        self.classes.iter()
    }

    pub fn syntaxes(&self) -> impl Iterator<Item = &Syntax> {
        self.syntaxes.iter()
    }

    pub fn matching_rules(&self) -> impl Iterator<Item = MatchingRule> {
        MatchingRule::all()
    }

    /// Reflexive; follows the SUP chain.
    pub fn is_subtype_of(&self, sub: &AttributeType, sup: &AttributeType) -> bool {
        // A type no other type derives from has itself as its only subtype: no chain to walk.
        if !sup.has_subtypes() {
            return std::ptr::eq(sub, sup) || sub.oid == sup.oid;
        }
        let mut current = Some(sub);
        // A chain cannot be longer than the number of types; the bound guards against cycles.
        for _ in 0..=self.attributes.len() {
            let Some(at) = current else { return false };
            if std::ptr::eq(at, sup) || at.oid == sup.oid {
                return true;
            }
            // The SUP's position was resolved when the type was added (a type of another schema
            // has none here, and is looked up by name).
            current = match at.sup_position {
                Some(position) if self.owns(at) => self.attributes.get(position as usize),
                _ => at.sup.as_deref().and_then(|s| self.attribute_type(s)),
            };
        }
        false
    }

    /// The numeric OID of an attribute type, object class or matching rule known by `name`.
    pub(crate) fn resolve_oid_name(&self, name: &str) -> Option<Vec<u8>> {
        if is_numeric_oid(name) {
            return None;
        }
        let oid = self
            .attribute_type(name)
            .map(|a| a.oid.clone())
            .or_else(|| self.object_class(name).map(|c| c.oid.clone()))
            .or_else(|| MatchingRule::by_name_or_oid(name).map(|r| r.oid().to_string()))?;
        Some(oid.into_bytes())
    }

    /// Expands an OID written as a numeric OID, a macro name or `macro:suffix`.
    fn expand_oid(&self, written: &str) -> Option<String> {
        if is_numeric_oid(written) {
            return Some(written.to_string());
        }
        match written.split_once(':') {
            Some((prefix, suffix)) => {
                let base = self.oid_macros.get(&prefix.to_ascii_lowercase())?;
                let oid = format!("{base}.{suffix}");
                is_numeric_oid(&oid).then_some(oid)
            }
            None => self.oid_macros.get(&written.to_ascii_lowercase()).cloned(),
        }
    }

    fn add_oid_macro(&mut self, place: &Place<'_>) -> Result<(), SchemaError> {
        let (name, written) = parse::parse_object_identifier(&place.statement.text)
            .map_err(|e| place.desc_error(e))?;
        if !is_descr(&name) {
            return Err(place.error(format!("invalid OID macro name \"{name}\"")));
        }
        let oid = self
            .expand_oid(&written)
            .ok_or_else(|| place.error(format!("cannot resolve OID \"{written}\"")))?;
        let key = name.to_ascii_lowercase();
        match self.oid_macros.get(&key) {
            Some(existing) if *existing != oid => {
                Err(place.duplicate(format!("object identifier {name}")))
            }
            _ => {
                self.oid_macros.insert(key, oid);
                Ok(())
            }
        }
    }

    fn element_oid(&self, place: &Place<'_>, written: &str) -> Result<String, SchemaError> {
        self.expand_oid(written)
            .ok_or_else(|| place.error(format!("invalid or unknown OID \"{written}\"")))
    }

    fn check_names(place: &Place<'_>, names: &[String]) -> Result<(), SchemaError> {
        match names.iter().find(|n| !is_descr(n)) {
            Some(bad) => Err(place.error(format!("invalid name \"{bad}\""))),
            None => Ok(()),
        }
    }

    fn rule(
        place: &Place<'_>,
        written: Option<&str>,
        inherited: Option<MatchingRule>,
    ) -> Result<Option<MatchingRule>, SchemaError> {
        match written {
            None => Ok(inherited),
            Some(w) => MatchingRule::by_name_or_oid(w)
                .map(Some)
                .ok_or_else(|| place.error(format!("unknown matching rule \"{w}\""))),
        }
    }

    fn add_attribute_type(&mut self, place: &Place<'_>) -> Result<(), SchemaError> {
        let raw =
            parse::parse_attribute_type(&place.statement.text).map_err(|e| place.desc_error(e))?;
        let oid = self.element_oid(place, &raw.oid)?;
        Self::check_names(place, &raw.names)?;
        let sup = match &raw.sup {
            Some(s) => Some(
                self.attribute_type(s)
                    .ok_or_else(|| place.error(format!("unknown supertype \"{s}\"")))?,
            ),
            None => None,
        };
        let syntax_written = match &raw.syntax {
            Some(s) => {
                let (base, bound) = match s.find('{') {
                    Some(i) => (
                        s.get(..i).unwrap_or_default(),
                        s.get(i..).unwrap_or_default(),
                    ),
                    None => (s.as_str(), ""),
                };
                let valid_bound = bound.is_empty()
                    || bound
                        .strip_prefix('{')
                        .and_then(|b| b.strip_suffix('}'))
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if !valid_bound {
                    return Err(place.error(format!("invalid syntax length in \"{s}\"")));
                }
                let base = self.element_oid(place, base)?;
                Some((base.clone(), format!("{base}{bound}")))
            }
            None => None,
        };
        let (syntax, check_syntax) = match (&syntax_written, sup) {
            (Some((base, _)), _) => (base.clone(), self.check_syntax_for(base)),
            (None, Some(sup)) => (sup.syntax.clone(), sup.check_syntax.clone()),
            (None, None) => return Err(place.error("attribute type has neither SYNTAX nor SUP")),
        };
        let usage = raw.usage.unwrap_or(Usage::UserApplications);
        if let Some(sup) = sup {
            if sup.usage != usage {
                return Err(place.error("USAGE differs from the supertype's"));
            }
        }
        if raw.collective && usage != Usage::UserApplications {
            return Err(place.error("a COLLECTIVE attribute type must have userApplications usage"));
        }
        if raw.no_user_modification && usage == Usage::UserApplications {
            return Err(place.error("NO-USER-MODIFICATION requires an operational USAGE"));
        }
        let at = AttributeType {
            oid,
            names: raw.names.clone(),
            desc: raw.desc.clone(),
            obsolete: raw.obsolete,
            sup: sup.map(|s| s.name().to_string()),
            equality: Self::rule(place, raw.equality.as_deref(), sup.and_then(|s| s.equality))?,
            ordering: Self::rule(place, raw.ordering.as_deref(), sup.and_then(|s| s.ordering))?,
            substr: Self::rule(place, raw.substr.as_deref(), sup.and_then(|s| s.substr))?,
            syntax,
            single_value: raw.single_value,
            collective: raw.collective,
            no_user_modification: raw.no_user_modification,
            usage,
            extensions: raw.extensions.clone(),
            declared: Declared {
                equality: raw.equality.is_some(),
                ordering: raw.ordering.is_some(),
                substr: raw.substr.is_some(),
                syntax: syntax_written.map(|(_, written)| written),
            },
            check: crate::syntax::check_for(&check_syntax),
            check_syntax,
            has_subtypes: false,
            position: u32::try_from(self.attributes.len())
                .map_err(|_| place.error("too many attribute types"))?,
            sup_position: None,
        };
        let mut clash = None;
        for key in std::iter::once(&at.oid).chain(at.names.iter()) {
            if let Some(i) = self.attribute_index.get(key) {
                clash = Some((i, key.clone()));
                break;
            }
        }
        if let Some((i, key)) = clash {
            return match self.attributes.get(i) {
                Some(existing) if existing.same_as(&at) => Ok(()),
                Some(existing) => Err(place.duplicate(format!(
                    "attribute type {key} (differs from {})",
                    existing.definition()
                ))),
                None => Err(place.duplicate(format!("attribute type {key}"))),
            };
        }
        let index = self.attributes.len();
        for key in std::iter::once(&at.oid).chain(at.names.iter()) {
            self.attribute_index.insert(key, index);
        }
        if at.oid == USER_PASSWORD_OID {
            self.user_password = Some(index);
        }
        let mut at = at;
        if let Some(sup) = at.sup.as_deref().and_then(|s| self.attribute_index.get(s)) {
            if let Some(sup_type) = self.attributes.get_mut(sup) {
                sup_type.has_subtypes = true;
                at.sup_position = Some(sup_type.position);
            }
        }
        self.attributes.push(at);
        Ok(())
    }

    /// The syntax that checks values of syntax `oid`: itself when this crate validates it, else
    /// what a loaded syntax definition substitutes for it (X-SUBST, followed to a known syntax).
    fn check_syntax_for(&self, oid: &str) -> String {
        let mut current = oid;
        // Each step moves to a syntax loaded earlier, so the chain is shorter than the list.
        for _ in 0..=self.syntaxes.len() {
            if crate::syntax::is_known(current) {
                break;
            }
            match self
                .syntaxes
                .iter()
                .find(|s| s.oid == current)
                .and_then(Syntax::substitute)
            {
                Some(next) => current = next,
                None => break,
            }
        }
        current.to_string()
    }

    fn add_syntax(&mut self, place: &Place<'_>) -> Result<(), SchemaError> {
        let raw = parse::parse_syntax(&place.statement.text).map_err(|e| place.desc_error(e))?;
        let oid = self.element_oid(place, &raw.oid)?;
        let mut extensions = raw.extensions;
        for (name, values) in &mut extensions {
            if !name.eq_ignore_ascii_case("X-SUBST") {
                continue;
            }
            // Stored as a numeric OID so that lookups and the published definition agree.
            for value in values.iter_mut() {
                let target = self
                    .expand_oid(value)
                    .filter(|t| self.syntaxes.iter().any(|s| s.oid == *t))
                    .ok_or_else(|| {
                        place.error(format!("substitute syntax \"{value}\" is not known"))
                    })?;
                *value = target;
            }
        }
        let syntax = Syntax {
            oid,
            desc: raw.desc.unwrap_or_default(),
            extensions,
        };
        match self.syntaxes.iter().find(|s| s.oid == syntax.oid) {
            Some(existing) if *existing == syntax => Ok(()),
            Some(existing) => Err(place.duplicate(format!(
                "LDAP syntax {} (differs from {})",
                syntax.oid,
                existing.definition()
            ))),
            None => {
                self.syntaxes.push(syntax);
                Ok(())
            }
        }
    }

    fn add_object_class(&mut self, place: &Place<'_>) -> Result<(), SchemaError> {
        let raw =
            parse::parse_object_class(&place.statement.text).map_err(|e| place.desc_error(e))?;
        let oid = self.element_oid(place, &raw.oid)?;
        Self::check_names(place, &raw.names)?;
        let mut sup = Vec::with_capacity(raw.sup.len());
        for s in &raw.sup {
            let class = self
                .object_class(s)
                .ok_or_else(|| place.error(format!("unknown superclass \"{s}\"")))?;
            sup.push(class.name().to_string());
        }
        let attributes = |list: &[String]| -> Result<Vec<String>, SchemaError> {
            list.iter()
                .map(|a| {
                    self.attribute_type(a)
                        .map(|at| at.name().to_string())
                        .ok_or_else(|| place.error(format!("unknown attribute type \"{a}\"")))
                })
                .collect()
        };
        let mut allowed: Vec<u32> = raw
            .must
            .iter()
            .chain(&raw.may)
            .filter_map(|a| self.attribute_type(a).map(|at| at.position))
            .collect();
        allowed.sort_unstable();
        allowed.dedup();
        let oc = ObjectClass {
            allowed,
            oid,
            names: raw.names.clone(),
            desc: raw.desc.clone(),
            obsolete: raw.obsolete,
            sup,
            kind: raw.kind,
            must: attributes(&raw.must)?,
            may: attributes(&raw.may)?,
            extensions: raw.extensions.clone(),
        };
        let mut clash = None;
        for key in std::iter::once(&oc.oid).chain(oc.names.iter()) {
            if let Some(i) = self.class_index.get(key) {
                clash = Some((i, key.clone()));
                break;
            }
        }
        if let Some((i, key)) = clash {
            return match self.classes.get(i) {
                Some(existing) if existing.same_as(&oc) => Ok(()),
                Some(existing) => Err(place.duplicate(format!(
                    "object class {key} (differs from {})",
                    existing.definition()
                ))),
                None => Err(place.duplicate(format!("object class {key}"))),
            };
        }
        let index = self.classes.len();
        for key in std::iter::once(&oc.oid).chain(oc.names.iter()) {
            self.class_index.insert(key, index);
        }
        self.classes.push(oc);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
