//! The wire-ready stored form of an entry (docs/design/entry-format.md): sections of BER PartialAttributes.
//!
//! A search that returns the usual attributes copies one section straight into the SearchResultEntry, so the
//! stored bytes are the answer (seed 000's BER cache made permanent, seed 002's "entries ready to send").

use canopy_ber::Reader;
use canopy_proto::{encode_partial_attribute, Dn};
use canopy_schema::{NormDn, Schema};

use crate::entry::{Attribute, Entry};

/// Format version byte, first byte of every stored entry. Version 1 (no order list) is still read.
pub const FORMAT_VERSION: u8 = 2;

/// Which section an attribute is stored in. The split follows the default access policy: the common answer
/// (user attributes a reader may see) is one contiguous run of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// User attributes readable under the default policy.
    User,
    /// User attributes only the root DN may read (userPassword and its subtypes, authPassword).
    Secret,
    /// Stored operational attributes (entryUUID, entryCSN, timestamps, creatorsName, ...).
    Operational,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("stored entry is corrupt: {0}")]
    Corrupt(&'static str),
    #[error("stored entry has format version {0}, this build reads 1 and {FORMAT_VERSION}")]
    Version(u8),
}

/// RFC 3112 authPassword: SCRAM secrets, as secret as userPassword.
pub const AUTH_PASSWORD_OID: &str = "1.3.6.1.4.1.4203.1.3.4";

/// Decides the section of an attribute description (canonical form).
pub fn section_of(schema: &Schema, desc: &str) -> Section {
    let type_name = crate::desc::split_stored(desc).0;
    match schema.attribute_type(type_name) {
        Some(at) => section_of_type(schema, at),
        None => Section::User,
    }
}

/// [`section_of`] for an attribute type already looked up.
pub fn section_of_type(schema: &Schema, at: &canopy_schema::AttributeType) -> Section {
    if at.is_operational() {
        return Section::Operational;
    }
    match schema.user_password() {
        Some(pw) if schema.is_subtype_of(at, pw) => Section::Secret,
        _ if at.oid == AUTH_PASSWORD_OID => Section::Secret,
        _ => Section::User,
    }
}

/// Encodes an entry. Layout: version u8; ndn RDN count u16 LE, each RDN as u16 LE length + bytes (leftmost
/// first); dn u32 LE length + bytes; user and secret section lengths u32 LE each; the order list (u16 LE
/// count, then one section byte per attribute in written order, empty when every user attribute comes
/// before every secret one and those before every operational one); then the user, secret and operational
/// sections, each a concatenation of PartialAttribute TLVs.
pub fn encode_entry(schema: &Schema, entry: &Entry, out: &mut Vec<u8>) {
    encode_entry_spliced(schema, entry, None, out);
}

/// [`encode_entry`] with the types of the entry's attributes already looked up, in their order
/// (`crate::check::attribute_types`): a write that checked the entry encodes it without a second
/// lookup per attribute.
pub fn encode_entry_typed(
    schema: &Schema,
    entry: &Entry,
    types: &[Option<&canopy_schema::AttributeType>],
    out: &mut Vec<u8>,
) {
    if types.len() != entry.attrs.len() {
        encode_entry(schema, entry, out);
        return;
    }
    let sections = types
        .iter()
        .map(|at| at.map_or(Section::User, |at| section_of_type(schema, at)))
        .collect();
    encode_sections(entry, sections, None, out);
}

/// Encodes an entry as [`encode_entry`] does, but with a hole (docs/design/big-values.md): the values of
/// the attribute described exactly `splice.0` are preceded by `splice.1` bytes that are not written,
/// the contents of a stored SET of values. Returns where in `out` those bytes belong; with them inserted
/// there, `out` is what `encode_entry` gives for the entry whose attribute holds the stored values
/// followed by its own. None (and no hole) without an attribute of that description in `entry`.
pub fn encode_entry_spliced(
    schema: &Schema,
    entry: &Entry,
    splice: Option<(&str, usize)>,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let sections = entry
        .attrs
        .iter()
        .map(|a| section_of(schema, &a.desc))
        .collect();
    encode_sections(entry, sections, splice, out)
}

/// The encoding of [`encode_entry_spliced`], each attribute in the section given in `sections`.
fn encode_sections(
    entry: &Entry,
    sections: Vec<Section>,
    splice: Option<(&str, usize)>,
    out: &mut Vec<u8>,
) -> Option<usize> {
    let mut hole = None;
    out.push(FORMAT_VERSION);
    let rdns = entry.ndn.rdns();
    put_u16(out, rdns.len());
    for rdn in rdns {
        put_u16(out, rdn.len());
        out.extend_from_slice(rdn.as_bytes());
    }
    let dn = entry.dn.to_string();
    put_u32(out, dn.len());
    out.extend_from_slice(dn.as_bytes());
    let lengths_at = out.len();
    out.extend_from_slice(&[0; 8]);
    let mut lengths = [0usize; 2];
    let tags: Vec<u8> = sections.iter().map(|s| section_tag(*s)).collect();
    if tags.is_sorted() {
        put_u16(out, 0);
    } else {
        put_u16(out, tags.len());
        out.extend_from_slice(&tags);
    }
    for (index, section) in [Section::User, Section::Secret, Section::Operational]
        .iter()
        .enumerate()
    {
        let start = out.len();
        let hole_before = hole.is_some();
        for (attr, _) in entry
            .attrs
            .iter()
            .zip(&sections)
            .filter(|(_, s)| *s == section)
        {
            match splice {
                Some((desc, stored)) if desc == attr.desc && hole.is_none() => {
                    hole = Some(encode_spliced_attribute(
                        out,
                        &attr.desc,
                        stored,
                        &attr.values,
                    ));
                }
                _ => {
                    let values: Vec<&[u8]> = attr.values.iter().map(|v| v.as_slice()).collect();
                    encode_partial_attribute(out, &attr.desc, &values);
                }
            }
        }
        if index < 2 {
            lengths[index] = out.len() - start;
            if !hole_before && hole.is_some() {
                lengths[index] += splice.map_or(0, |(_, n)| n);
            }
        }
    }
    out[lengths_at..lengths_at + 4].copy_from_slice(&(lengths[0] as u32).to_le_bytes());
    out[lengths_at + 4..lengths_at + 8].copy_from_slice(&(lengths[1] as u32).to_le_bytes());
    hole
}

/// A PartialAttribute whose SET holds `stored` bytes of value TLVs (left out: a hole, whose offset is
/// returned) and then `values`.
fn encode_spliced_attribute(
    out: &mut Vec<u8>,
    desc: &str,
    stored: usize,
    values: &[Vec<u8>],
) -> usize {
    use canopy_ber::{encoded_len, write_header};
    let set_len = stored + values.iter().map(|v| encoded_len(v.len())).sum::<usize>();
    let seq_len = encoded_len(desc.len()) + encoded_len(set_len);
    out.reserve(encoded_len(seq_len));
    write_header(out, canopy_ber::tag::SEQUENCE, seq_len);
    write_header(out, canopy_ber::tag::OCTET_STRING, desc.len());
    out.extend_from_slice(desc.as_bytes());
    write_header(out, canopy_ber::tag::SET, set_len);
    let hole = out.len();
    for value in values {
        write_header(out, canopy_ber::tag::OCTET_STRING, value.len());
        out.extend_from_slice(value);
    }
    hole
}

/// The byte that names a section in the order list; the sections' stored order is the tags' order.
fn section_tag(section: Section) -> u8 {
    match section {
        Section::User => 0,
        Section::Secret => 1,
        Section::Operational => 2,
    }
}

fn put_u16(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n.min(u16::MAX as usize) as u16).to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n.min(u32::MAX as usize) as u32).to_le_bytes());
}

/// One attribute of a stored entry in place: (section number, description, the whole TLV, the contents
/// of its SET of values).
pub type Span<'a> = (usize, &'a str, &'a [u8], &'a [u8]);

/// A stored entry viewed in place, without copying.
#[derive(Debug, Clone, Copy)]
pub struct StoredEntry<'a> {
    pub ndn_rdns: &'a [u8],
    pub rdn_count: usize,
    pub dn: &'a [u8],
    pub user: &'a [u8],
    pub secret: &'a [u8],
    pub operational: &'a [u8],
    /// The section (0 user, 1 secret, 2 operational) of each attribute in the order the entry was
    /// written; empty when that order is the sections' own (see [`StoredEntry::in_order`]).
    pub order: &'a [u8],
}

struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() < n {
            return Err(WireError::Corrupt("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn u16(&mut self) -> Result<usize, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    }
    fn u32(&mut self) -> Result<usize, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
}

impl<'a> StoredEntry<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<StoredEntry<'a>, WireError> {
        let mut c = Cursor { buf: bytes };
        let version = c.take(1)?[0];
        if version != FORMAT_VERSION && version != 1 {
            return Err(WireError::Version(version));
        }
        let rdn_count = c.u16()?;
        let rdn_start = c.buf;
        let mut rdn_len = 0;
        for _ in 0..rdn_count {
            let n = c.u16()?;
            c.take(n)?;
            rdn_len += 2 + n;
        }
        let ndn_rdns = &rdn_start[..rdn_len];
        let dn_len = c.u32()?;
        let dn = c.take(dn_len)?;
        let user_len = c.u32()?;
        let secret_len = c.u32()?;
        let order = if version == 1 {
            &[][..]
        } else {
            let n = c.u16()?;
            c.take(n)?
        };
        if order.iter().any(|&tag| tag > 2) {
            return Err(WireError::Corrupt("order list"));
        }
        let user = c.take(user_len)?;
        let secret = c.take(secret_len)?;
        Ok(StoredEntry {
            ndn_rdns,
            rdn_count,
            dn,
            user,
            secret,
            operational: c.buf,
            order,
        })
    }

    /// Whether the entry was written with every user attribute before every secret one, so that the two
    /// sections one after the other are the answer in written order.
    pub fn secret_follows_user(&self) -> bool {
        let mut secret_seen = false;
        for &tag in self.order {
            match tag {
                0 if secret_seen => return false,
                1 => secret_seen = true,
                _ => {}
            }
        }
        true
    }

    /// The attributes of the sections `wanted` selects (by section number: user, secret, operational),
    /// in the order the entry was written, as slapd keeps it: (section number, description, the whole
    /// TLV, the contents of its SET of values). A corrupt TLV ends its section.
    pub fn in_order(&self, wanted: [bool; 3]) -> impl Iterator<Item = Result<Span<'a>, WireError>> {
        let mut spans = [self.user, self.secret, self.operational].map(attribute_spans);
        let order = self.order;
        let mut next = 0;
        let mut section = 0;
        std::iter::from_fn(move || loop {
            let index = if order.is_empty() {
                section
            } else {
                *order.get(next)? as usize
            };
            if index > 2 {
                return None;
            }
            let item = spans[index].next();
            if order.is_empty() {
                if item.is_none() {
                    section += 1;
                    continue;
                }
            } else {
                next += 1;
            }
            let Some(item) = item else { continue };
            if wanted[index] {
                return Some(item.map(|(desc, tlv, set)| (index, desc, tlv, set)));
            }
        })
    }

    /// The normalized RDNs as stored, leftmost first (a corrupt list ends early).
    pub fn ndn_rdns(&self) -> impl Iterator<Item = &'a [u8]> {
        let mut c = Cursor { buf: self.ndn_rdns };
        (0..self.rdn_count).map_while(move |_| {
            let n = c.u16().ok()?;
            c.take(n).ok()
        })
    }

    /// Whether the normalized DN ends with the RDNs `base` (normalized, leftmost first), and how many RDNs
    /// lie below them; read from the stored bytes without building the DN.
    pub fn below(&self, base: &[String]) -> Option<usize> {
        let extra = self.rdn_count.checked_sub(base.len())?;
        let mut tail = self.ndn_rdns().skip(extra);
        for rdn in base {
            if tail.next()? != rdn.as_bytes() {
                return None;
            }
        }
        Some(extra)
    }

    /// The normalized DN's RDN strings, leftmost first.
    pub fn ndn(&self) -> Result<NormDn, WireError> {
        let mut c = Cursor { buf: self.ndn_rdns };
        let mut rdns = Vec::with_capacity(self.rdn_count);
        for _ in 0..self.rdn_count {
            let n = c.u16()?;
            let rdn =
                std::str::from_utf8(c.take(n)?).map_err(|_| WireError::Corrupt("rdn utf-8"))?;
            rdns.push(rdn.to_string());
        }
        Ok(NormDn::from_normalized_rdns(rdns))
    }

    /// Decodes the whole entry into memory (for modifications and filter evaluation).
    pub fn to_entry(&self) -> Result<Entry, WireError> {
        let dn = Dn::parse(self.dn).map_err(|_| WireError::Corrupt("dn"))?;
        let mut attrs = Vec::new();
        for span in self.in_order([true; 3]) {
            let (_, desc, _, set) = span?;
            attrs.push(Attribute {
                desc: desc.to_string(),
                values: set_values(set)?,
            });
        }
        Ok(Entry {
            dn,
            ndn: self.ndn()?,
            attrs,
        })
    }
}

/// The values of a stored SET of values (its contents), copied.
fn set_values(set: &[u8]) -> Result<Vec<Vec<u8>>, WireError> {
    let mut reader = Reader::new(set);
    let mut values = Vec::new();
    while !reader.is_empty() {
        let value = reader
            .read_octet_string(canopy_ber::tag::OCTET_STRING)
            .map_err(|_| WireError::Corrupt("attribute TLV"))?;
        values.push(value.to_vec());
    }
    Ok(values)
}

/// An entry decoded but for one attribute: the entry without it, and where it stood in the attribute
/// list with the contents of its stored SET (its value TLVs, not read).
pub type PartialEntry<'a> = (Entry, Option<(usize, &'a [u8])>);

impl<'a> StoredEntry<'a> {
    /// The stored entry decoded except for the attribute described exactly `desc`
    /// (docs/design/big-values.md), which is left out (its first TLV, should there be more); None beside
    /// the entry when it holds no such attribute.
    pub fn to_entry_without(&self, desc: &str) -> Result<PartialEntry<'a>, WireError> {
        let dn = Dn::parse(self.dn).map_err(|_| WireError::Corrupt("dn"))?;
        let mut attrs = Vec::new();
        let mut left_out = None;
        for span in self.in_order([true; 3]) {
            let (_, name, _, set) = span?;
            if name == desc && left_out.is_none() {
                left_out = Some((attrs.len(), set));
                continue;
            }
            attrs.push(Attribute {
                desc: name.to_string(),
                values: set_values(set)?,
            });
        }
        let entry = Entry {
            dn,
            ndn: self.ndn()?,
            attrs,
        };
        Ok((entry, left_out))
    }
}

/// The PartialAttribute TLVs of one section located without reading their values: (description, the
/// whole TLV, the contents of its SET of values). Ends after the first corrupt TLV.
pub fn attribute_spans(
    section: &[u8],
) -> impl Iterator<Item = Result<(&str, &[u8], &[u8]), WireError>> {
    let mut rest = section;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut reader = Reader::new(rest);
        let item = read_attribute_header(&mut reader);
        let used = rest.len() - reader.remaining().len();
        let (tlv, tail) = rest.split_at(used.min(rest.len()));
        rest = if item.is_ok() { tail } else { &[] };
        Some(item.map(|(desc, set)| (desc, tlv, set.remaining())))
    })
}

/// Iterates the PartialAttribute TLVs of one section: (description, values), borrowed.
pub fn attributes(section: &[u8]) -> impl Iterator<Item = Result<(&str, Vec<&[u8]>), WireError>> {
    let mut reader = Reader::new(section);
    std::iter::from_fn(move || {
        if reader.is_empty() {
            return None;
        }
        Some(read_attribute(&mut reader))
    })
}

/// One PartialAttribute TLV with its raw bytes, for copying selected attributes into an answer.
pub fn attribute_tlvs(section: &[u8]) -> impl Iterator<Item = Result<(&str, &[u8]), WireError>> {
    let mut rest = section;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut reader = Reader::new(rest);
        let before = reader.remaining();
        let item = read_attribute(&mut reader);
        let used = before.len() - reader.remaining().len();
        let (tlv, tail) = rest.split_at(used.min(rest.len()));
        rest = tail;
        Some(item.map(|(desc, _)| (desc, tlv)))
    })
}

fn read_attribute<'a>(reader: &mut Reader<'a>) -> Result<(&'a str, Vec<&'a [u8]>), WireError> {
    let corrupt = |_| WireError::Corrupt("attribute TLV");
    let (desc, mut set) = read_attribute_header(reader)?;
    let mut values = Vec::new();
    while !set.is_empty() {
        values.push(
            set.read_octet_string(canopy_ber::tag::OCTET_STRING)
                .map_err(corrupt)?,
        );
    }
    Ok((desc, values))
}

/// One PartialAttribute TLV: its description and a reader over its SET of values, not read yet.
fn read_attribute_header<'a>(reader: &mut Reader<'a>) -> Result<(&'a str, Reader<'a>), WireError> {
    let corrupt = |_| WireError::Corrupt("attribute TLV");
    let mut attr = reader
        .read_constructed(canopy_ber::tag::SEQUENCE)
        .map_err(corrupt)?;
    let desc = attr
        .read_octet_string(canopy_ber::tag::OCTET_STRING)
        .map_err(corrupt)?;
    let desc = std::str::from_utf8(desc).map_err(|_| WireError::Corrupt("attribute name"))?;
    let set = attr
        .read_constructed(canopy_ber::tag::SET)
        .map_err(corrupt)?;
    Ok((desc, set))
}

/// A stored entry read in place for testing filters: each filter component walks the stored TLVs and
/// reads the values of only the attributes it looks at. Nothing is decoded ahead or copied.
#[derive(Debug, Clone)]
pub struct StoredView<'a> {
    stored: StoredEntry<'a>,
    /// Attributes left out (those the requester may not search).
    hidden: Vec<&'a str>,
}

impl<'a> StoredView<'a> {
    /// Every section of `stored`.
    pub fn new(stored: &StoredEntry<'a>) -> StoredView<'a> {
        StoredView {
            stored: *stored,
            hidden: Vec::new(),
        }
    }

    /// Leaves out the attribute described exactly `desc`.
    pub fn hide(&mut self, desc: &'a str) {
        self.hidden.push(desc);
    }

    /// The descriptions of every stored attribute.
    pub fn descriptions(&self) -> impl Iterator<Item = &'a str> {
        every_attribute(self.stored).map(|(desc, _)| desc)
    }

    /// Each attribute not left out: its description and a reader over its SET of values, not read
    /// yet.
    pub fn attribute_sets(&self) -> impl Iterator<Item = (&'a str, Reader<'a>)> + '_ {
        every_attribute(self.stored).filter(|(desc, _)| !self.hidden.contains(desc))
    }

    /// The stored entry viewed.
    pub fn stored(&self) -> &StoredEntry<'a> {
        &self.stored
    }
}

/// (description, reader over the SET of values) of each PartialAttribute of every section; a TLV
/// that does not read ends its section.
fn every_attribute(stored: StoredEntry<'_>) -> impl Iterator<Item = (&str, Reader<'_>)> {
    [stored.user, stored.secret, stored.operational]
        .into_iter()
        .flat_map(|section| {
            let mut reader = Reader::new(section);
            std::iter::from_fn(move || {
                if reader.is_empty() {
                    return None;
                }
                read_attribute_header(&mut reader).ok()
            })
        })
}

#[cfg(test)]
mod ndn_tests {
    use super::*;

    #[test]
    fn stored_ndn_round_trips() {
        let schema = Schema::builtin();
        let dn = Dn::parse(b"uid=User1+cn=A,ou=People,dc=Example,dc=com").unwrap();
        let ndn = schema.normalize_dn(&dn).unwrap();
        let entry = Entry {
            dn,
            ndn: ndn.clone(),
            attrs: Vec::new(),
        };
        let mut bytes = Vec::new();
        encode_entry(&schema, &entry, &mut bytes);
        let parsed = StoredEntry::parse(&bytes).unwrap();
        let base = |s: &str| {
            schema
                .normalize_dn(&Dn::parse(s.as_bytes()).unwrap())
                .unwrap()
        };
        assert_eq!(parsed.below(base("dc=example,dc=com").rdns()), Some(2));
        assert_eq!(
            parsed.below(base("ou=people,dc=example,dc=com").rdns()),
            Some(1)
        );
        assert_eq!(parsed.below(ndn.rdns()), Some(0));
        assert_eq!(
            parsed.below(base("ou=groups,dc=example,dc=com").rdns()),
            None
        );
        assert_eq!(
            parsed.below(base("dc=other,dc=example,dc=com").rdns()),
            None
        );
        assert_eq!(parsed.below(base("").rdns()), Some(4));
        let stored = parsed.ndn().unwrap();
        assert_eq!(stored, ndn);
        assert_eq!(
            stored.as_str(),
            "cn=a+uid=user1,ou=people,dc=example,dc=com"
        );
        assert_eq!(stored.rdns().len(), 4);
    }
}

#[cfg(test)]
mod splice_tests {
    use super::*;

    fn entry(schema: &Schema, attrs: &[(&str, &[&str])]) -> Entry {
        let dn = Dn::parse(b"cn=g,dc=example,dc=com").unwrap();
        Entry {
            ndn: schema.normalize_dn(&dn).unwrap(),
            dn,
            attrs: attrs
                .iter()
                .map(|(desc, values)| Attribute {
                    desc: desc.to_string(),
                    values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                })
                .collect(),
        }
    }

    /// `to_entry_without` then `encode_entry_spliced` with the stored values put in the hole gives what
    /// `encode_entry` gives for the whole entry with the values added: in the user section (a short and
    /// a long SET, whose length header grows) and in the secret one.
    #[test]
    fn a_spliced_entry_is_the_whole_entry_encoded() {
        let schema = Schema::builtin();
        let long: Vec<String> = (0..200)
            .map(|i| format!("cn=m{i},dc=example,dc=com"))
            .collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        for (desc, old, added) in [
            ("member", &["cn=a"][..], &["cn=b", "cn=c"][..]),
            ("member", &long[..3], &long[3..]),
            ("member", &long[..], &["cn=z"][..]),
            ("userPassword", &["a"][..], &["b"][..]),
        ] {
            let csn = ["20261127000000.000000Z#000000#000#000000"];
            let group = |values: &[&str]| {
                entry(
                    &schema,
                    &[
                        ("objectClass", &["groupOfNames"][..]),
                        (desc, values),
                        ("cn", &["g"][..]),
                        ("entryCSN", &csn[..]),
                    ],
                )
            };
            let all: Vec<&str> = old.iter().chain(added).copied().collect();
            let mut whole = Vec::new();
            encode_entry(&schema, &group(&all), &mut whole);
            let mut before = Vec::new();
            encode_entry(&schema, &group(old), &mut before);
            let stored = StoredEntry::parse(&before).unwrap();
            let (mut partial, Some((at, set))) = stored.to_entry_without(desc).unwrap() else {
                panic!("{desc} not found");
            };
            assert_eq!(partial.attrs.len(), 3);
            partial.attrs.insert(
                at,
                Attribute {
                    desc: desc.to_string(),
                    values: added.iter().map(|v| v.as_bytes().to_vec()).collect(),
                },
            );
            let mut out = Vec::new();
            let hole = encode_entry_spliced(&schema, &partial, Some((desc, set.len())), &mut out);
            let hole = hole.unwrap();
            let spliced = [&out[..hole], set, &out[hole..]].concat();
            assert_eq!(
                spliced,
                whole,
                "{desc}: {} old, {} added",
                old.len(),
                added.len()
            );
        }
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;

    fn entry(schema: &Schema, descs: &[&str]) -> Entry {
        let dn = Dn::parse(b"cn=o,dc=example,dc=com").unwrap();
        Entry {
            ndn: schema.normalize_dn(&dn).unwrap(),
            dn,
            attrs: descs
                .iter()
                .map(|desc| Attribute {
                    desc: desc.to_string(),
                    values: vec![format!("{desc} value").into_bytes()],
                })
                .collect(),
        }
    }

    fn names<'a>(stored: &StoredEntry<'a>, wanted: [bool; 3]) -> Vec<(usize, &'a str)> {
        stored
            .in_order(wanted)
            .map(|item| item.map(|(section, desc, _, _)| (section, desc)).unwrap())
            .collect()
    }

    /// The attributes come back in the order they were written, whatever their sections, as slapd keeps
    /// them (issue 31: a userPassword in the middle of an entry, a ref before objectClass).
    #[test]
    fn written_order_survives_the_sections() {
        let schema = Schema::builtin();
        let written = [
            "ref",
            "objectClass",
            "cn",
            "userPassword",
            "description",
            "entryCSN",
        ];
        let original = entry(&schema, &written);
        let mut bytes = Vec::new();
        encode_entry(&schema, &original, &mut bytes);
        let stored = StoredEntry::parse(&bytes).unwrap();
        assert_eq!(stored.order, &[2, 0, 0, 1, 0, 2]);
        assert!(!stored.secret_follows_user());
        assert_eq!(stored.to_entry().unwrap(), original);
        assert_eq!(
            names(&stored, [true, false, true]),
            [
                (2, "ref"),
                (0, "objectClass"),
                (0, "cn"),
                (0, "description"),
                (2, "entryCSN")
            ]
        );
        assert_eq!(
            names(&stored, [true, true, false]),
            [
                (0, "objectClass"),
                (0, "cn"),
                (1, "userPassword"),
                (0, "description")
            ]
        );
        let (without, left_out) = stored.to_entry_without("userPassword").unwrap();
        assert_eq!(left_out.map(|(at, _)| at), Some(3));
        assert_eq!(without.attrs.len(), 5);
    }

    /// An entry written in the sections' own order keeps an empty order list, and a version 1 entry
    /// (written before the list existed) still reads.
    #[test]
    fn section_order_needs_no_list_and_version_1_reads() {
        let schema = Schema::builtin();
        let original = entry(&schema, &["objectClass", "cn", "userPassword", "entryUUID"]);
        let mut bytes = Vec::new();
        encode_entry(&schema, &original, &mut bytes);
        let stored = StoredEntry::parse(&bytes).unwrap();
        assert!(stored.order.is_empty());
        assert!(stored.secret_follows_user());
        // Version 1 is version 2 without the order list's count.
        let at =
            bytes.len() - stored.user.len() - stored.secret.len() - stored.operational.len() - 2;
        let mut old = bytes.clone();
        old[0] = 1;
        old.drain(at..at + 2);
        let parsed = StoredEntry::parse(&old).unwrap();
        assert_eq!(parsed.to_entry().unwrap(), original);
        let mut future = bytes;
        future[0] = 3;
        assert_eq!(
            StoredEntry::parse(&future).unwrap_err(),
            WireError::Version(3)
        );
    }
}
