//! DN normalization against the schema: each RDN value checked against its attribute's syntax and
//! normalized with its EQUALITY rule; and values normalized under a rule with what only the schema
//! knows.

use crate::error::{InvalidValue, SchemaError};
use crate::matching::MatchingRule;
use crate::norm_dn::{check_single_rdn, join_avas, norm_ava, parse_dn_value, NormDn};
use crate::schema::Schema;
use crate::values::unique_member;
use canopy_proto::Dn;

impl Schema {
    /// Normalizes every RDN value with its attribute's EQUALITY rule (exact bytes when it has none)
    /// after checking it against the attribute's syntax, and attribute names (or OIDs) to the
    /// canonical lower-case name.
    pub fn normalize_dn(&self, dn: &Dn) -> Result<NormDn, SchemaError> {
        let mut rdns = Vec::with_capacity(dn.rdns.len());
        for rdn in &dn.rdns {
            let mut avas = Vec::with_capacity(rdn.avas.len());
            for ava in &rdn.avas {
                let at = self
                    .attribute_type(&ava.attr)
                    .ok_or_else(|| SchemaError::UnknownAttributeType(ava.attr.clone()))?;
                let invalid = |reason: String| SchemaError::InvalidValue {
                    attr: at.name().to_string(),
                    reason,
                };
                if !at.validate(&ava.value) {
                    return Err(invalid(format!(
                        "value does not conform to syntax {}",
                        at.syntax
                    )));
                }
                let value = match at.equality {
                    Some(rule) => self
                        .normalize_value(rule, &ava.value)
                        .map_err(|e| invalid(e.reason))?,
                    None => ava.value.clone(),
                };
                avas.push(norm_ava(at.name(), &value));
            }
            rdns.push(join_avas(avas));
        }
        Ok(NormDn::from_rdns(rdns))
    }

    /// Normalizes `value` under `rule` with what only the schema knows: DN rules
    /// (distinguishedNameMatch, uniqueMemberMatch) normalize through `normalize_dn`, OID rules map
    /// names to numeric OIDs where the schema knows the name. Every other rule is
    /// `MatchingRule::normalize`. This is the entry point for equality keys of stored values.
    pub fn normalize_value(
        &self,
        rule: MatchingRule,
        value: &[u8],
    ) -> Result<Vec<u8>, InvalidValue> {
        match rule {
            MatchingRule::DistinguishedNameMatch => self.normalize_dn_value(value),
            MatchingRule::RdnMatch => {
                check_single_rdn(value)?;
                self.normalize_dn_value(value)
            }
            MatchingRule::UniqueMemberMatch => {
                unique_member(value, |dn| self.normalize_dn_value(dn))
            }
            MatchingRule::ObjectIdentifierMatch
            | MatchingRule::ObjectIdentifierFirstComponentMatch => {
                let norm = rule.normalize(value)?;
                let text = String::from_utf8_lossy(&norm);
                Ok(self.resolve_oid_name(&text).unwrap_or(norm))
            }
            // A value that is no readable certificate keeps its bytes: it matches no assertion.
            MatchingRule::CertificateExactMatch => match self.certificate_value(value) {
                Some(norm) => Ok(norm),
                None => rule.normalize(value),
            },
            _ => rule.normalize(value),
        }
    }

    /// Normalizes an assertion value under `rule`: like [`Schema::normalize_value`], except for rules
    /// whose assertion syntax differs from the attribute's (certificateExactMatch asserts a serial number
    /// and issuer, RFC 4523 §2.1).
    pub fn normalize_assertion(
        &self,
        rule: MatchingRule,
        value: &[u8],
    ) -> Result<Vec<u8>, InvalidValue> {
        match rule {
            MatchingRule::CertificateExactMatch => self.certificate_assertion(value),
            _ => self.normalize_value(rule, value),
        }
    }

    pub(crate) fn normalize_dn_value(&self, value: &[u8]) -> Result<Vec<u8>, InvalidValue> {
        let dn = parse_dn_value(value)?;
        let norm = self
            .normalize_dn(&dn)
            .map_err(|e| InvalidValue::new(e.to_string()))?;
        Ok(norm.into_text().into_bytes())
    }
}

#[cfg(test)]
mod tests;
