//! Matching rules (RFC 4517 §4.2 and the extra rules OpenLDAP has): metadata and dispatch.
//!
//! Every rule maps a value to a normal form; equality is byte equality of normal forms, ordering is
//! `compare` on normal forms. Rules that need the schema (DN and OID rules) have a schema-free
//! approximation here; `Schema::normalize_value` gives their exact form.

mod approx;
mod order_key;

use crate::error::InvalidValue;
use crate::norm_dn::{normalize_dn_without_schema, normalize_rdn_without_schema};
use crate::prep::{prepare, Fold, Spaces};
use crate::values;
use std::cmp::Ordering;

/// Whether a rule is used for equality, ordering or substrings assertions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Equality,
    Ordering,
    Substrings,
}

macro_rules! rules {
    ($($variant:ident, $name:literal, $oid:literal, $syntax:literal, $kind:ident;)*) => {
        /// One matching rule known to the server.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MatchingRule {
            $($variant,)*
        }

        const ALL: &[MatchingRule] = &[$(MatchingRule::$variant,)*];

        impl MatchingRule {
            /// The OID of the rule.
            pub fn oid(self) -> &'static str {
                match self { $(MatchingRule::$variant => $oid,)* }
            }
            /// The rule's name as OpenLDAP spells it.
            pub fn name(self) -> &'static str {
                match self { $(MatchingRule::$variant => $name,)* }
            }
            /// The syntax of the rule's assertion value.
            pub fn syntax_oid(self) -> &'static str {
                match self { $(MatchingRule::$variant => $syntax,)* }
            }
            pub fn kind(self) -> MatchKind {
                match self { $(MatchingRule::$variant => MatchKind::$kind,)* }
            }
            /// Whether `value` is valid in the syntax of the rule's assertion value (values of
            /// syntaxes Canopy does not check are accepted).
            pub fn validates(self, value: &[u8]) -> bool {
                crate::syntax::validate_with(crate::syntax::check_for(self.syntax_oid()), value)
            }
        }
    };
}

rules! {
    ObjectIdentifierMatch, "objectIdentifierMatch", "2.5.13.0", "1.3.6.1.4.1.1466.115.121.1.38", Equality;
    DistinguishedNameMatch, "distinguishedNameMatch", "2.5.13.1", "1.3.6.1.4.1.1466.115.121.1.12", Equality;
    CaseIgnoreMatch, "caseIgnoreMatch", "2.5.13.2", "1.3.6.1.4.1.1466.115.121.1.15", Equality;
    CaseIgnoreOrderingMatch, "caseIgnoreOrderingMatch", "2.5.13.3", "1.3.6.1.4.1.1466.115.121.1.15", Ordering;
    CaseIgnoreSubstringsMatch, "caseIgnoreSubstringsMatch", "2.5.13.4", "1.3.6.1.4.1.1466.115.121.1.58", Substrings;
    CaseExactMatch, "caseExactMatch", "2.5.13.5", "1.3.6.1.4.1.1466.115.121.1.15", Equality;
    CaseExactOrderingMatch, "caseExactOrderingMatch", "2.5.13.6", "1.3.6.1.4.1.1466.115.121.1.15", Ordering;
    CaseExactSubstringsMatch, "caseExactSubstringsMatch", "2.5.13.7", "1.3.6.1.4.1.1466.115.121.1.58", Substrings;
    NumericStringMatch, "numericStringMatch", "2.5.13.8", "1.3.6.1.4.1.1466.115.121.1.36", Equality;
    NumericStringOrderingMatch, "numericStringOrderingMatch", "2.5.13.9", "1.3.6.1.4.1.1466.115.121.1.36", Ordering;
    NumericStringSubstringsMatch, "numericStringSubstringsMatch", "2.5.13.10", "1.3.6.1.4.1.1466.115.121.1.58", Substrings;
    CaseIgnoreListMatch, "caseIgnoreListMatch", "2.5.13.11", "1.3.6.1.4.1.1466.115.121.1.41", Equality;
    CaseIgnoreListSubstringsMatch, "caseIgnoreListSubstringsMatch", "2.5.13.12", "1.3.6.1.4.1.1466.115.121.1.58", Substrings;
    BooleanMatch, "booleanMatch", "2.5.13.13", "1.3.6.1.4.1.1466.115.121.1.7", Equality;
    IntegerMatch, "integerMatch", "2.5.13.14", "1.3.6.1.4.1.1466.115.121.1.27", Equality;
    IntegerOrderingMatch, "integerOrderingMatch", "2.5.13.15", "1.3.6.1.4.1.1466.115.121.1.27", Ordering;
    BitStringMatch, "bitStringMatch", "2.5.13.16", "1.3.6.1.4.1.1466.115.121.1.6", Equality;
    OctetStringMatch, "octetStringMatch", "2.5.13.17", "1.3.6.1.4.1.1466.115.121.1.40", Equality;
    OctetStringOrderingMatch, "octetStringOrderingMatch", "2.5.13.18", "1.3.6.1.4.1.1466.115.121.1.40", Ordering;
    OctetStringSubstringsMatch, "octetStringSubstringsMatch", "2.5.13.19", "1.3.6.1.4.1.1466.115.121.1.40", Substrings;
    TelephoneNumberMatch, "telephoneNumberMatch", "2.5.13.20", "1.3.6.1.4.1.1466.115.121.1.50", Equality;
    TelephoneNumberSubstringsMatch, "telephoneNumberSubstringsMatch", "2.5.13.21", "1.3.6.1.4.1.1466.115.121.1.58", Substrings;
    PresentationAddressMatch, "presentationAddressMatch", "2.5.13.22", "1.3.6.1.4.1.1466.115.121.1.43", Equality;
    UniqueMemberMatch, "uniqueMemberMatch", "2.5.13.23", "1.3.6.1.4.1.1466.115.121.1.34", Equality;
    ProtocolInformationMatch, "protocolInformationMatch", "2.5.13.24", "1.3.6.1.4.1.1466.115.121.1.42", Equality;
    GeneralizedTimeMatch, "generalizedTimeMatch", "2.5.13.27", "1.3.6.1.4.1.1466.115.121.1.24", Equality;
    GeneralizedTimeOrderingMatch, "generalizedTimeOrderingMatch", "2.5.13.28", "1.3.6.1.4.1.1466.115.121.1.24", Ordering;
    IntegerFirstComponentMatch, "integerFirstComponentMatch", "2.5.13.29", "1.3.6.1.4.1.1466.115.121.1.27", Equality;
    ObjectIdentifierFirstComponentMatch, "objectIdentifierFirstComponentMatch", "2.5.13.30", "1.3.6.1.4.1.1466.115.121.1.38", Equality;
    DirectoryStringFirstComponentMatch, "directoryStringFirstComponentMatch", "2.5.13.31", "1.3.6.1.4.1.1466.115.121.1.15", Equality;
    CertificateExactMatch, "certificateExactMatch", "2.5.13.34", "1.3.6.1.1.15.1", Equality;
    CertificatePairExactMatch, "certificatePairExactMatch", "2.5.13.36", "1.3.6.1.1.15.3", Equality;
    CertificateListExactMatch, "certificateListExactMatch", "2.5.13.38", "1.3.6.1.1.15.5", Equality;
    AttributeCertificateExactMatch, "attributeCertificateExactMatch", "2.5.13.45", "1.3.6.1.4.1.4203.666.11.10.2.2", Equality;
    IntegerBitAndMatch, "integerBitAndMatch", "1.2.840.113556.1.4.803", "1.3.6.1.4.1.1466.115.121.1.27", Equality;
    IntegerBitOrMatch, "integerBitOrMatch", "1.2.840.113556.1.4.804", "1.3.6.1.4.1.1466.115.121.1.27", Equality;
    RdnMatch, "rdnMatch", "1.2.36.79672281.1.13.3", "1.2.36.79672281.1.5.0", Equality;
    CaseExactIA5Match, "caseExactIA5Match", "1.3.6.1.4.1.1466.109.114.1", "1.3.6.1.4.1.1466.115.121.1.26", Equality;
    CaseIgnoreIA5Match, "caseIgnoreIA5Match", "1.3.6.1.4.1.1466.109.114.2", "1.3.6.1.4.1.1466.115.121.1.26", Equality;
    CaseIgnoreIA5SubstringsMatch, "caseIgnoreIA5SubstringsMatch", "1.3.6.1.4.1.1466.109.114.3", "1.3.6.1.4.1.1466.115.121.1.26", Substrings;
    CaseExactIA5SubstringsMatch, "caseExactIA5SubstringsMatch", "1.3.6.1.4.1.4203.1.2.1", "1.3.6.1.4.1.1466.115.121.1.26", Substrings;
    UuidMatch, "UUIDMatch", "1.3.6.1.1.16.2", "1.3.6.1.1.16.1", Equality;
    UuidOrderingMatch, "UUIDOrderingMatch", "1.3.6.1.1.16.3", "1.3.6.1.1.16.1", Ordering;
    CsnMatch, "CSNMatch", "1.3.6.1.4.1.4203.666.11.2.2", "1.3.6.1.4.1.4203.666.11.2.1", Equality;
    CsnOrderingMatch, "CSNOrderingMatch", "1.3.6.1.4.1.4203.666.11.2.3", "1.3.6.1.4.1.4203.666.11.2.1", Ordering;
    AuthzMatch, "authzMatch", "1.3.6.1.4.1.4203.666.4.12", "1.3.6.1.4.1.4203.666.2.7", Equality;
}

/// How a rule prepares values and assertion parts for substring matching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubstringPrep {
    /// RFC 4518 preparation with the given folding and insignificant space handling.
    Text(Fold),
    /// IA5 strings: like `Text`, but slapd trims the spaces at both ends of every assertion part
    /// (observed: `(mail=john *)` and `(mail=* john*)` match "John.Smith@...", `(mail=* *)` matches
    /// every value).
    Ia5(Fold),
    /// Numeric strings: every space removed.
    Numeric,
    /// Telephone numbers: spaces and hyphens removed, case ignored.
    Telephone,
    /// Raw octets.
    Octets,
}

impl MatchingRule {
    /// Looks a rule up by name (ASCII case-insensitive) or numeric OID.
    pub fn by_name_or_oid(s: &str) -> Option<MatchingRule> {
        ALL.iter()
            .copied()
            .find(|r| r.oid() == s || r.name().eq_ignore_ascii_case(s))
    }

    /// Every rule this crate implements.
    pub fn all() -> impl Iterator<Item = MatchingRule> {
        ALL.iter().copied()
    }

    /// RFC 4512 MatchingRuleDescription.
    pub fn definition(self) -> String {
        format!(
            "( {} NAME '{}' SYNTAX {} )",
            self.oid(),
            self.name(),
            self.syntax_oid()
        )
    }

    /// Canonical form. Under an equality rule two values match iff their normal forms are byte-equal;
    /// under an ordering rule `compare` orders normal forms. Err when the value is invalid for the rule's
    /// syntax (e.g. "abc" for integerMatch). DN and OID rules are schema-free approximations here; use
    /// `Schema::normalize_value` for those.
    pub fn normalize(self, value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
        use MatchingRule::*;
        match self {
            CaseIgnoreMatch
            | CaseIgnoreOrderingMatch
            | CaseIgnoreSubstringsMatch
            | DirectoryStringFirstComponentMatch => values::directory_string(value, Fold::Unicode),
            CaseExactMatch | CaseExactOrderingMatch | CaseExactSubstringsMatch => {
                values::directory_string(value, Fold::None)
            }
            CaseIgnoreIA5Match | CaseIgnoreIA5SubstringsMatch => values::ia5(value, Fold::Ascii),
            CaseExactIA5Match | CaseExactIA5SubstringsMatch => values::ia5(value, Fold::None),
            CaseIgnoreListMatch | CaseIgnoreListSubstringsMatch => values::postal_address(value),
            NumericStringMatch | NumericStringOrderingMatch | NumericStringSubstringsMatch => {
                values::numeric_string(value)
            }
            TelephoneNumberMatch | TelephoneNumberSubstringsMatch => values::telephone(value),
            IntegerMatch | IntegerOrderingMatch => values::integer(value),
            IntegerFirstComponentMatch => values::integer(values::first_component(value)),
            GeneralizedTimeMatch | GeneralizedTimeOrderingMatch => values::generalized_time(value),
            BooleanMatch => values::boolean(value),
            BitStringMatch => values::bit_string(value),
            ObjectIdentifierMatch => values::oid(value),
            ObjectIdentifierFirstComponentMatch => values::oid(values::first_component(value)),
            DistinguishedNameMatch => normalize_dn_without_schema(value),
            RdnMatch => normalize_rdn_without_schema(value),
            IntegerBitAndMatch | IntegerBitOrMatch => values::bit_mask(value),
            UniqueMemberMatch => values::unique_member(value, normalize_dn_without_schema),
            UuidMatch | UuidOrderingMatch => values::uuid(value),
            CsnMatch | CsnOrderingMatch => values::csn(value),
            OctetStringMatch
            | OctetStringOrderingMatch
            | OctetStringSubstringsMatch
            | PresentationAddressMatch
            | ProtocolInformationMatch
            | CertificateExactMatch
            | CertificatePairExactMatch
            | CertificateListExactMatch
            | AttributeCertificateExactMatch
            | AuthzMatch => Ok(value.to_vec()),
        }
    }

    /// Whether `value`'s normal form under this rule is `norm`, for the usual value of the string rules:
    /// non-empty ASCII without a space, whose normal form is the value itself, in lower case under the
    /// case-ignoring rules (`prepare` leaves nothing else to do). The same answer as comparing
    /// `normalize(value)` with `norm`, without building the normal form; None for any other rule or
    /// value (the caller normalizes then).
    pub fn ascii_normal_form_is(self, value: &[u8], norm: &[u8]) -> Option<bool> {
        use MatchingRule::*;
        let fold = match self {
            CaseIgnoreMatch
            | CaseIgnoreOrderingMatch
            | CaseIgnoreSubstringsMatch
            | DirectoryStringFirstComponentMatch
            | CaseIgnoreIA5Match
            | CaseIgnoreIA5SubstringsMatch => true,
            CaseExactMatch
            | CaseExactOrderingMatch
            | CaseExactSubstringsMatch
            | CaseExactIA5Match
            | CaseExactIA5SubstringsMatch => false,
            _ => return None,
        };
        let plain = |b: &u8| b.is_ascii() && *b != b' ';
        if value.is_empty() {
            return None;
        }
        if value.len() != norm.len() {
            // Such a value's normal form has its length.
            return value.iter().all(plain).then_some(false);
        }
        // One pass: every byte is checked, and compared.
        let mut equal = true;
        for (v, n) in value.iter().zip(norm) {
            if !plain(v) {
                return None;
            }
            equal &= if fold {
                v.to_ascii_lowercase() == *n
            } else {
                v == n
            };
        }
        Some(equal)
    }

    /// Orders two normal forms produced by `normalize` of this rule.
    pub fn compare(self, a_norm: &[u8], b_norm: &[u8]) -> Ordering {
        use MatchingRule::*;
        match self {
            IntegerMatch | IntegerOrderingMatch | IntegerFirstComponentMatch => {
                values::compare_integers(a_norm, b_norm)
            }
            GeneralizedTimeMatch | GeneralizedTimeOrderingMatch => {
                values::compare_times(a_norm, b_norm)
            }
            _ => a_norm.cmp(b_norm),
        }
    }

    /// Whether a stored value matches an assertion value under this rule, both in the normal form of
    /// `normalize` (or `Schema::normalize_value`). Equality rules compare normal forms for byte
    /// equality, except the bitwise rules: integerBitAndMatch holds when every bit of the assertion is
    /// set in the value, integerBitOrMatch when any is. Under an ordering rule the value matches when
    /// it sorts before the assertion (X.501 extensible matching). Substrings rules never match a
    /// single assertion value (use `matches_substrings`).
    pub fn value_matches(self, value_norm: &[u8], assertion_norm: &[u8]) -> bool {
        match self {
            MatchingRule::IntegerBitAndMatch | MatchingRule::IntegerBitOrMatch => {
                let (Some(value), Some(mask)) = (
                    values::parse_bit_mask(value_norm),
                    values::parse_bit_mask(assertion_norm),
                ) else {
                    return false;
                };
                if self == MatchingRule::IntegerBitAndMatch {
                    value & mask == mask
                } else {
                    value & mask != 0
                }
            }
            _ => match self.kind() {
                MatchKind::Equality => value_norm == assertion_norm,
                MatchKind::Ordering => self.compare(value_norm, assertion_norm) == Ordering::Less,
                MatchKind::Substrings => false,
            },
        }
    }

    fn substring_prep(self) -> Option<SubstringPrep> {
        use MatchingRule::*;
        match self {
            CaseIgnoreMatch
            | CaseIgnoreOrderingMatch
            | CaseIgnoreSubstringsMatch
            | CaseIgnoreListMatch
            | CaseIgnoreListSubstringsMatch
            | DirectoryStringFirstComponentMatch => Some(SubstringPrep::Text(Fold::Unicode)),
            CaseExactMatch | CaseExactOrderingMatch | CaseExactSubstringsMatch => {
                Some(SubstringPrep::Text(Fold::None))
            }
            CaseIgnoreIA5Match | CaseIgnoreIA5SubstringsMatch => {
                Some(SubstringPrep::Ia5(Fold::Ascii))
            }
            CaseExactIA5Match | CaseExactIA5SubstringsMatch => Some(SubstringPrep::Ia5(Fold::None)),
            NumericStringMatch | NumericStringOrderingMatch | NumericStringSubstringsMatch => {
                Some(SubstringPrep::Numeric)
            }
            TelephoneNumberMatch | TelephoneNumberSubstringsMatch => Some(SubstringPrep::Telephone),
            OctetStringMatch | OctetStringOrderingMatch | OctetStringSubstringsMatch => {
                Some(SubstringPrep::Octets)
            }
            _ => None,
        }
    }

    /// Normal form of one substring assertion part, for index keys (same folding as
    /// `matches_substrings`). Inner runs of spaces collapse to one space; a space at either end is kept
    /// as one space because it is significant inside the value (IA5 rules trim it, as slapd does).
    /// A numeric string or telephone number part with nothing left after removing spaces (and
    /// hyphens) is invalid: slapd answers such an assertion Undefined.
    pub fn normalize_substring(self, part: &[u8]) -> Result<Vec<u8>, InvalidValue> {
        let prep = self.substring_prep().ok_or_else(|| {
            InvalidValue::new(format!("{} has no substrings matching", self.name()))
        })?;
        let text = |part: &[u8], fold: Fold| -> Result<String, InvalidValue> {
            let s = std::str::from_utf8(part)
                .map_err(|_| InvalidValue::new("substring is not valid UTF-8"))?;
            Ok(prepare(s, fold, Spaces::CollapseKeepEnds))
        };
        let nonempty = |form: Vec<u8>| {
            if form.is_empty() {
                Err(InvalidValue::new("substring has no significant characters"))
            } else {
                Ok(form)
            }
        };
        match prep {
            SubstringPrep::Text(fold) => Ok(text(part, fold)?.into_bytes()),
            // An IA5 assertion must be IA5 itself: slapd refuses full-width look-alikes before any folding.
            SubstringPrep::Ia5(_) if !part.is_ascii() => {
                Err(InvalidValue::new("substring is not an IA5 string"))
            }
            SubstringPrep::Ia5(fold) => Ok(text(part, fold)?.trim_matches(' ').as_bytes().to_vec()),
            SubstringPrep::Numeric => {
                if !part.iter().all(|b| b.is_ascii_digit() || *b == b' ') {
                    return Err(InvalidValue::new("substring is not a numeric string"));
                }
                nonempty(part.iter().copied().filter(|b| *b != b' ').collect())
            }
            SubstringPrep::Telephone => nonempty(
                part.iter()
                    .filter(|b| **b != b' ' && **b != b'-')
                    .map(u8::to_ascii_lowercase)
                    .collect(),
            ),
            SubstringPrep::Octets => Ok(part.to_vec()),
        }
    }

    /// Substring matching with this rule (RFC 4518 §2.6 preparation for strings). Equality and ordering
    /// rules of string syntaxes match like their substrings counterpart.
    pub fn matches_substrings(
        self,
        value: &[u8],
        initial: Option<&[u8]>,
        any: &[Vec<u8>],
        final_: Option<&[u8]>,
    ) -> Result<bool, InvalidValue> {
        let prep = self.substring_prep().ok_or_else(|| {
            InvalidValue::new(format!("{} has no substrings matching", self.name()))
        })?;
        let value = match prep {
            // slapd prepares each line of a postal address on its own ("a $ b" is "a$b") but
            // prepares assertion parts as plain strings, so "*a $ b*" does not match it.
            SubstringPrep::Text(_)
                if matches!(
                    self,
                    MatchingRule::CaseIgnoreListMatch | MatchingRule::CaseIgnoreListSubstringsMatch
                ) =>
            {
                values::postal_address(value)?
            }
            SubstringPrep::Text(fold) | SubstringPrep::Ia5(fold) => {
                let s = std::str::from_utf8(value)
                    .map_err(|_| InvalidValue::new("value is not valid UTF-8"))?;
                prepare(s, fold, Spaces::Trim).into_bytes()
            }
            _ => self.normalize_substring(value)?,
        };
        // The value has no leading or trailing space after preparation, so an initial part's
        // leading space and a final part's trailing space can only be insignificant. Inner spaces
        // are single in both value and parts, so a space shared by two adjacent parts ("a " and
        // " b" against "a b") is not matched twice: a known narrowing of RFC 4518 §2.6.1.
        let trim = matches!(prep, SubstringPrep::Text(_));
        let mut rest: &[u8] = &value;
        if let Some(initial) = initial {
            let mut part = self.normalize_substring(initial)?;
            if trim {
                trim_start_space(&mut part);
            }
            match rest.strip_prefix(part.as_slice()) {
                Some(r) => rest = r,
                None => return Ok(false),
            }
        }
        if let Some(f) = final_ {
            let mut part = self.normalize_substring(f)?;
            if trim {
                trim_end_space(&mut part);
            }
            match rest.strip_suffix(part.as_slice()) {
                Some(r) => rest = r,
                None => return Ok(false),
            }
        }
        for a in any {
            let part = self.normalize_substring(a)?;
            if part.is_empty() {
                continue;
            }
            match find(rest, &part) {
                Some(pos) => rest = rest.get(pos + part.len()..).unwrap_or_default(),
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Whether `~=` under this equality rule is slapd's phonetic word matching (the string rules
    /// caseIgnore, caseExact, caseIgnoreIA5 and caseExactIA5). For every other rule slapd answers
    /// `~=` exactly like `=`, and so should callers.
    pub fn has_phonetic_approx(self) -> bool {
        use MatchingRule::*;
        matches!(
            self,
            CaseIgnoreMatch | CaseExactMatch | CaseIgnoreIA5Match | CaseExactIA5Match
        )
    }

    /// Phonetic codes of the words of a stored value, in order, empty codes included (see
    /// `approx`). Err for a rule without phonetic approx or a value its syntax rejects.
    pub fn approx_value_codes(self, value: &[u8]) -> Result<Vec<String>, InvalidValue> {
        let prepared = self.approx_prepare(value)?;
        Ok(approx::value_codes(&prepared))
    }

    /// Phonetic codes of the words of an approx assertion; empty when nothing is left of it (then
    /// it matches no value).
    pub fn approx_assertion_codes(self, assertion: &[u8]) -> Result<Vec<String>, InvalidValue> {
        let prepared = self.approx_prepare(assertion)?;
        Ok(approx::assertion_codes(&prepared))
    }

    /// Whether an assertion's codes match a value's codes: each assertion code found among the
    /// value's, in order.
    pub fn approx_codes_match(value: &[String], assertion: &[String]) -> bool {
        approx::codes_match(value, assertion)
    }

    fn approx_prepare(self, value: &[u8]) -> Result<String, InvalidValue> {
        if !self.has_phonetic_approx() {
            return Err(InvalidValue::new(format!(
                "{} has no phonetic approximate matching",
                self.name()
            )));
        }
        String::from_utf8(self.normalize(value)?)
            .map_err(|_| InvalidValue::new("value is not valid UTF-8"))
    }

    /// Index key material for approximate matching: with a phonetic rule, the value's word codes
    /// joined by spaces (codes never contain one); otherwise the equality normal form.
    pub fn approx_key(self, value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
        if self.has_phonetic_approx() {
            Ok(self.approx_value_codes(value)?.join(" ").into_bytes())
        } else {
            self.normalize(value)
        }
    }
}

/// An initial part of only spaces stays one space, so it matches no trimmed value (slapd:
/// `(cn= *)` is FALSE while `(cn= john*)` matches "John").
fn trim_start_space(part: &mut Vec<u8>) {
    if part.len() > 1 && part.first() == Some(&b' ') {
        part.remove(0);
    }
}

fn trim_end_space(part: &mut Vec<u8>) {
    if part.last() == Some(&b' ') {
        part.pop();
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests;
