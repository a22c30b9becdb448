//! slapd's deref overlay (draft-masarati-ldap-deref, control 1.3.6.1.4.1.4203.666.5.16): the
//! request's specifications decoded with slapd's answers, and the response control of one search
//! result entry, each DN value of a named attribute followed to its entry and the requested
//! attributes of that entry read as the requester may read them.

use canopy_ber::{Reader, Writer};
use canopy_core::wire::{attributes, StoredEntry};
use canopy_core::LdapError;
use canopy_directory::{Directory, Snapshot};
use canopy_proto::oid::CONTROL_DEREF;
use canopy_proto::{Control, Dn, ResultCode};
use canopy_schema::Schema;

use super::reader::SearchRequester;
use crate::acl::{privileges, EntryView, SearchAccess};
use crate::databases::Database;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OCTET_STRING: u8 = 0x04;
/// `attrVals [0] PartialAttributeList`, constructed.
const ATTR_VALS: u8 = 0xa0;
const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";

/// One `DerefSpec`: the attribute whose DN values are followed, and the attributes read from the
/// entries they name, by their schema names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerefSpec {
    pub attr: String,
    pub attributes: Vec<String>,
}

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

/// The request's `DerefSpecs`, checked as slapd's deref overlay checks them. A value that does not
/// open with a sequence holds no specification (slapd reads none from it and answers nothing).
pub fn specs(value: &[u8], schema: &Schema) -> Result<Vec<DerefSpec>, LdapError> {
    let mut outer = Reader::new(value);
    let Ok(mut list) = outer.read_constructed(SEQUENCE) else {
        return Ok(Vec::new());
    };
    let mut specs: Vec<DerefSpec> = Vec::new();
    while !list.is_empty() {
        let spec_error = || protocol_error("Dereference control: derefSpec decoding error");
        let mut spec = list.read_constructed(SEQUENCE).map_err(|_| spec_error())?;
        let name = spec
            .read_octet_string(OCTET_STRING)
            .map_err(|_| spec_error())?;
        let mut names = spec.read_constructed(SEQUENCE).map_err(|_| spec_error())?;
        if names.is_empty() {
            return Err(spec_error());
        }
        let at = std::str::from_utf8(name)
            .ok()
            .and_then(|n| schema.attribute_type(n))
            .ok_or_else(|| protocol_error("Dereference control: derefAttr decoding error"))?;
        if at.syntax != DN_SYNTAX {
            return Err(protocol_error(
                "Dereference control: derefAttr syntax not distinguishedName",
            ));
        }
        if specs.iter().any(|s| s.attr == at.name()) {
            return Err(protocol_error(
                "Dereference control: derefAttr must be unique within control",
            ));
        }
        let mut attrs = Vec::new();
        while !names.is_empty() {
            let found = names
                .read_octet_string(OCTET_STRING)
                .ok()
                .and_then(|n| std::str::from_utf8(n).ok())
                .and_then(|n| schema.attribute_type(n))
                .ok_or_else(|| protocol_error("Dereference control: attribute decoding error"))?;
            attrs.push(found.name().to_string());
        }
        specs.push(DerefSpec {
            attr: at.name().to_string(),
            attributes: attrs,
        });
    }
    Ok(specs)
}

/// One `DerefRes`: the attribute, the DN value followed, and the attributes read (empty when the
/// entry is missing, unreadable or holds none of them: `attrVals` is then left out).
struct DerefRes<'a> {
    attr: &'a str,
    value: &'a [u8],
    found: Vec<(&'a str, Vec<&'a [u8]>)>,
}

fn encode(results: &[DerefRes<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    w.constructed(SEQUENCE, |w| {
        for res in results {
            w.constructed(SEQUENCE, |w| {
                w.octet_string(OCTET_STRING, res.attr.as_bytes());
                w.octet_string(OCTET_STRING, res.value);
                if !res.found.is_empty() {
                    w.constructed(ATTR_VALS, |w| {
                        for (name, values) in &res.found {
                            w.constructed(SEQUENCE, |w| {
                                w.octet_string(OCTET_STRING, name.as_bytes());
                                w.constructed(SET, |w| {
                                    for value in values {
                                        w.octet_string(OCTET_STRING, value);
                                    }
                                });
                            });
                        }
                    });
                }
            });
        }
    });
    out
}

/// The values of the attribute `name` (a schema name, no options) that `stored` holds.
fn held<'a>(schema: &Schema, stored: &StoredEntry<'a>, name: &str) -> Option<Vec<&'a [u8]>> {
    let wanted = schema.attribute_type(name)?;
    [stored.user, stored.secret, stored.operational]
        .into_iter()
        .flat_map(attributes)
        .filter_map(Result::ok)
        .find(|(desc, _)| {
            !desc.contains(';')
                && schema
                    .attribute_type(desc)
                    .is_some_and(|at| std::ptr::eq(at, wanted))
        })
        .map(|(_, values)| values)
}

/// What the deref answer of one entry reads through.
pub(super) struct Deref<'a, 'r> {
    pub specs: &'a [DerefSpec],
    pub dir: &'a Database,
    pub txn: &'a Snapshot,
    pub access: &'a SearchAccess<'r>,
    /// The access view of the entry sent (None: the root DN, who reads everything).
    pub view: Option<&'a EntryView>,
    pub requester: &'a mut SearchRequester<'r>,
}

impl Deref<'_, '_> {
    /// The response control for the search result entry `shown`; None when no specification found
    /// a value it may read.
    pub fn control(&mut self, shown: &StoredEntry<'_>) -> Result<Option<Control>, LdapError> {
        let schema = self.dir.schema().clone();
        let mut results = Vec::new();
        // The followed entries' bytes live in the snapshot, as long as the results.
        let txn = self.txn;
        for spec in self.specs {
            let Some(values) = held(&schema, shown, &spec.attr) else {
                continue;
            };
            if let Some(view) = self.view {
                if !self.access.allows_attr(view, &spec.attr, privileges::READ) {
                    continue;
                }
            }
            for value in values {
                let found = self.follow(&schema, txn, value, &spec.attributes)?;
                results.push(DerefRes {
                    attr: &spec.attr,
                    value,
                    found,
                });
            }
        }
        if results.is_empty() {
            return Ok(None);
        }
        Ok(Some(Control {
            oid: CONTROL_DEREF.to_string(),
            critical: false,
            value: Some(encode(&results)),
        }))
    }

    /// The attributes `names` (in their order, a name given twice read twice) of the entry the DN
    /// `value` names, as the requester may read them; nothing for a missing or unreadable entry.
    fn follow<'t>(
        &mut self,
        schema: &Schema,
        txn: &'t Snapshot,
        value: &[u8],
        names: &'t [String],
    ) -> Result<Vec<(&'t str, Vec<&'t [u8]>)>, LdapError> {
        let Some(ndn) = Dn::parse(value)
            .ok()
            .and_then(|dn| schema.normalize_dn(&dn).ok())
        else {
            return Ok(Vec::new());
        };
        let Some((_, bytes)) = self.dir.lookup(txn, &ndn)? else {
            return Ok(Vec::new());
        };
        let stored = Directory::parse_stored(bytes)?;
        if !self.requester.reads_entry(&ndn, &stored) {
            return Ok(Vec::new());
        }
        let mut found = Vec::new();
        for name in names {
            let Some(values) = held(schema, &stored, name) else {
                continue;
            };
            let Some(values) = self.requester.readable(&ndn, &stored, name, values) else {
                continue;
            };
            found.push((name.as_str(), values));
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(attr: &str, attrs: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.constructed(SEQUENCE, |w| {
            w.octet_string(OCTET_STRING, attr.as_bytes());
            w.constructed(SEQUENCE, |w| {
                for a in attrs {
                    w.octet_string(OCTET_STRING, a.as_bytes());
                }
            });
        });
        out
    }

    fn list(specs: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        w.constructed(SEQUENCE, |w| {
            for s in specs {
                w.raw(s);
            }
        });
        out
    }

    #[test]
    fn specifications() {
        let schema = Schema::builtin();
        let ok = specs(
            &list(&[
                spec("Member", &["UID", "commonName"]),
                spec("owner", &["cn"]),
            ]),
            &schema,
        )
        .unwrap();
        assert_eq!(
            ok,
            vec![
                DerefSpec {
                    attr: "member".into(),
                    attributes: vec!["uid".into(), "cn".into()],
                },
                DerefSpec {
                    attr: "owner".into(),
                    attributes: vec!["cn".into()],
                },
            ]
        );
        assert_eq!(specs(b"\x30\x00", &schema).unwrap(), Vec::new());
        assert_eq!(specs(b"xx", &schema).unwrap(), Vec::new());
        let error = |value: &[u8]| specs(value, &schema).unwrap_err().message;
        let cases: [(Vec<u8>, &str); 6] = [
            (
                list(&[spec("member", &[])]),
                "Dereference control: derefSpec decoding error",
            ),
            (
                list(&[spec("member", &["nosuch"])]),
                "Dereference control: attribute decoding error",
            ),
            (
                list(&[spec("member", &["*"])]),
                "Dereference control: attribute decoding error",
            ),
            (
                list(&[spec("cn", &["uid"])]),
                "Dereference control: derefAttr syntax not distinguishedName",
            ),
            (
                list(&[spec("nosuch", &["uid"])]),
                "Dereference control: derefAttr decoding error",
            ),
            (
                list(&[spec("member", &["uid"]), spec("member", &["cn"])]),
                "Dereference control: derefAttr must be unique within control",
            ),
        ];
        for (value, text) in cases {
            assert_eq!(error(&value), text, "{value:?}");
        }
    }

    #[test]
    fn response_encoding() {
        let results = [
            DerefRes {
                attr: "member",
                value: b"uid=a",
                found: vec![("uid", vec![&b"a"[..]])],
            },
            DerefRes {
                attr: "member",
                value: b"uid=gone",
                found: Vec::new(),
            },
        ];
        let mut want = Vec::new();
        want.extend_from_slice(b"\x30\x33");
        want.extend_from_slice(b"\x30\x1d\x04\x06member\x04\x05uid=a");
        want.extend_from_slice(b"\xa0\x0c\x30\x0a\x04\x03uid\x31\x03\x04\x01a");
        want.extend_from_slice(b"\x30\x12\x04\x06member\x04\x08uid=gone");
        assert_eq!(encode(&results), want);
    }
}
