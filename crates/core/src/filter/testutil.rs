//! Test helpers shared by the semantic modules: entries written as LDIF-like text.

use canopy_proto::Dn;
use canopy_schema::Schema;

use crate::desc::AttrDesc;
use crate::entry::{Attribute, Entry};

/// Builds an entry from `dn: ...` followed by `attr: value` lines; descriptions are canonicalized and
/// repeated descriptions merged, without any schema check.
pub(crate) fn entry(schema: &Schema, text: &str) -> Entry {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap();
    let dn_text = first.strip_prefix("dn:").unwrap().trim();
    let dn = Dn::parse(dn_text.as_bytes()).unwrap();
    let ndn = schema.normalize_dn(&dn).unwrap();
    let mut attrs: Vec<Attribute> = Vec::new();
    for line in lines {
        let (desc, value) = line.split_once(':').unwrap();
        let desc = AttrDesc::parse(schema, desc.trim())
            .unwrap()
            .to_desc_string();
        let value = value.strip_prefix(' ').unwrap_or(value).as_bytes().to_vec();
        match attrs.iter_mut().find(|a| a.desc == desc) {
            Some(a) => a.values.push(value),
            None => attrs.push(Attribute {
                desc,
                values: vec![value],
            }),
        }
    }
    Entry { dn, ndn, attrs }
}

/// Attribute values as strings, in stored order, for assertions.
pub(crate) fn values(entry: &Entry, desc: &str) -> Vec<String> {
    entry
        .get(desc)
        .map(|a| {
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .unwrap_or_default()
}
