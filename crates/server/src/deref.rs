//! slapd's deref overlay (draft-masarati-ldap-deref, control 1.3.6.1.4.1.4203.666.5.16) in the
//! frontend, `DerefHook`: the request's specifications decoded with slapd's answers, and the
//! response control of each search result entry, each DN value of a named attribute followed to
//! its entry (through the search's `EntryReading`) and the requested attributes read there.

use std::sync::Arc;

use canopy_ber::{Reader, Writer};
use canopy_core::wire::StoredEntry;
use canopy_core::LdapError;
use canopy_proto::oid::CONTROL_DEREF;
use canopy_proto::{Control, ResultCode};
use canopy_schema::Schema;

use crate::databases::{Database, EntryAnswer, EntryReading, FrontHook, ReadAttributes};
use crate::ops::search::following::held;

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OCTET_STRING: u8 = 0x04;
/// `attrVals [0] PartialAttributeList`, constructed.
const ATTR_VALS: u8 = 0xa0;
const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";

/// The deref overlay of one database; it has no options (nor has slapd's).
pub struct DerefHook;

impl FrontHook for DerefHook {
    fn serves_control(&self, oid: &str) -> bool {
        oid == CONTROL_DEREF
    }

    fn entry_answer(
        &self,
        dir: &Database,
        control: &Control,
    ) -> Result<Option<Box<dyn EntryAnswer>>, LdapError> {
        if control.oid != CONTROL_DEREF {
            return Ok(None);
        }
        let schema = dir.schema().clone();
        let specs = specs(control.value.as_deref().unwrap_or_default(), &schema)?;
        Ok(Some(Box::new(DerefAnswer { schema, specs })))
    }
}

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
    found: ReadAttributes,
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

/// The overlay's answer to one search's control.
struct DerefAnswer {
    schema: Arc<Schema>,
    specs: Vec<DerefSpec>,
}

impl EntryAnswer for DerefAnswer {
    /// None when no specification's attribute has a value the requester may read on `shown`.
    fn control(
        &self,
        shown: &StoredEntry<'_>,
        reading: &mut dyn EntryReading,
    ) -> Result<Option<Control>, LdapError> {
        let mut results = Vec::new();
        for spec in &self.specs {
            let Some(values) = held(&self.schema, shown, &spec.attr) else {
                continue;
            };
            if !reading.reads_here(&spec.attr) {
                continue;
            }
            for value in values {
                let found = reading.follow(value, &spec.attributes)?;
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
                found: vec![("uid".to_string(), vec![b"a".to_vec()])],
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
