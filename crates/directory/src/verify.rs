//! The consistency check of one database (`canopy verify`, a fsck): every table walked in one read
//! snapshot, and dn2id, id2entry, dn2children and every configured index checked against each other.
//!
//! What must hold (docs/design/storage.md): each id2entry record is a readable entry whose DN key maps
//! back to its ID in dn2id; each dn2id record names an entry with that DN key; each entry but the suffix
//! has its parent in dn2id and is listed once, under that parent, in dn2children (the suffix under 0);
//! each `idx.<attr>` table holds exactly the keys `entry_keys` computes for every entry. Indexes are
//! compared by an order-independent fingerprint of their (key, ID) pairs first, so memory stays bounded;
//! only an index whose fingerprint differs is compared pair by pair, to name each wrong record.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use canopy_core::index::{entry_keys, entry_keys_all, IndexSpec};
use canopy_core::wire::StoredEntry;
use canopy_core::Entry;
use canopy_mdb::{RawTable, ReadOps, ReadTxn, StoreError};

use crate::database::Directory;
use crate::keys::dn_key;

/// Problems shown per table; the rest are counted.
const SHOWN_PER_TABLE: u64 = 100;

/// One inconsistency: the table it was found in, the record's key (printable) and ID where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub table: String,
    pub key: Option<String>,
    pub id: Option<u64>,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:", self.table)?;
        if let Some(key) = &self.key {
            write!(f, " key {key}")?;
        }
        if let Some(id) = self.id {
            write!(f, " id {id}")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// What a check went through and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub entries: u64,
    /// Records read per table, in the order checked.
    pub tables: Vec<(String, u64)>,
    /// Every problem found, shown or not.
    pub problems: u64,
    /// Indexes not checked because they are still building (or not yet started).
    pub building: Vec<String>,
}

/// Where a check is: the phase, records done, records in the phase.
pub type ProgressFn<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// What the entry walk remembers of each entry for the other tables.
struct Known {
    /// Hash of the entry's DN key.
    key_hash: u64,
    /// The parent's ID (0 for the suffix); None when the parent is missing.
    parent: Option<u64>,
    /// Seen in dn2children.
    listed: bool,
}

/// An order-independent digest of a set of (key, ID) pairs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    count: u64,
    sum: [u64; 2],
}

impl Fingerprint {
    fn add(&mut self, key: &[u8], id: u64) {
        self.count += 1;
        for (seed, sum) in self.sum.iter_mut().enumerate() {
            let mut h = DefaultHasher::new();
            (seed as u8, key, id).hash(&mut h);
            *sum = sum.wrapping_add(h.finish());
        }
    }
}

/// Collects problems, showing at most [`SHOWN_PER_TABLE`] per table.
struct Sink<'a> {
    report: &'a mut dyn FnMut(Problem),
    per_table: HashMap<String, u64>,
    total: u64,
}

impl Sink<'_> {
    fn found(&mut self, table: &str, key: Option<&[u8]>, id: Option<u64>, what: String) {
        self.total += 1;
        let seen = self.per_table.entry(table.to_string()).or_default();
        *seen += 1;
        if *seen <= SHOWN_PER_TABLE {
            (self.report)(Problem {
                table: table.to_string(),
                key: key.map(printable),
                id,
                what,
            });
        }
    }

    /// Reports how many problems of each table were not shown.
    fn close(&mut self) {
        let mut hidden: Vec<(String, u64)> = self
            .per_table
            .iter()
            .filter(|(_, n)| **n > SHOWN_PER_TABLE)
            .map(|(t, n)| (t.clone(), n - SHOWN_PER_TABLE))
            .collect();
        hidden.sort();
        for (table, n) in hidden {
            (self.report)(Problem {
                table,
                key: None,
                id: None,
                what: format!("{n} more problems not shown"),
            });
        }
    }
}

/// A key as text: printable ASCII as it is, every other byte (and `\`) as `\xx` hex.
pub fn printable(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    for &b in key {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\{b:02x}"));
        }
    }
    out
}

fn hash_of(key: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

fn decode_id(raw: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(raw).ok().map(u64::from_be_bytes)
}

impl Directory {
    /// Checks every table of this database against the others in one snapshot, calling `report` for each
    /// problem (at most 100 per table, then a count) and `progress` as it goes. Fails only when the
    /// store cannot be read at all; everything it can read but finds wrong is a [`Problem`].
    pub fn verify(
        &self,
        progress: ProgressFn<'_>,
        report: &mut dyn FnMut(Problem),
    ) -> Result<Summary, StoreError> {
        let txn = self.store().read()?;
        let mut sink = Sink {
            report,
            per_table: HashMap::new(),
            total: 0,
        };
        let mut summary = Summary::default();
        // An index still building is skipped: only a complete one must hold every entry's keys.
        let specs = self.indexes(&txn).to_vec();
        summary.building = self
            .index_status()
            .into_iter()
            .filter(|s| !specs.iter().any(|c| c.attr == s.spec.attr))
            .map(|s| s.spec.attr)
            .collect();
        let total = txn.entry_count()?;
        let next_id = match txn.get_meta(b"\x00next_id")? {
            Some(raw) => decode_id(&raw),
            None => Some(1),
        };
        if next_id.is_none() {
            sink.found(
                "meta",
                Some(b"\x00next_id"),
                None,
                "not an 8-byte ID".into(),
            );
        }

        // id2entry: each entry readable, in dn2id under its own ID, its parent present.
        let mut known: HashMap<u64, Known> = HashMap::with_capacity(total as usize);
        let mut expected = vec![Fingerprint::default(); specs.len()];
        let mut read = 0u64;
        for item in txn.raw_pairs(RawTable::Id2Entry)? {
            let (key, bytes) = item?;
            read += 1;
            if read & 1023 == 0 {
                progress("entries", read, total);
            }
            let Some(id) = decode_id(key) else {
                sink.found(
                    "id2entry",
                    Some(key),
                    None,
                    "key is not an 8-byte ID".into(),
                );
                continue;
            };
            if id == 0 {
                sink.found("id2entry", None, Some(0), "ID 0 is never an entry".into());
            }
            if let Some(next) = next_id {
                if id >= next {
                    sink.found(
                        "id2entry",
                        None,
                        Some(id),
                        format!("ID is not below meta next_id {next}"),
                    );
                }
            }
            let entry = match StoredEntry::parse(bytes).and_then(|s| s.to_entry()) {
                Ok(entry) => entry,
                Err(e) => {
                    sink.found("id2entry", None, Some(id), format!("unreadable entry: {e}"));
                    continue;
                }
            };
            let parent = self.check_entry(&txn, id, &entry, &mut sink)?;
            known.insert(
                id,
                Known {
                    key_hash: hash_of(&dn_key(&entry.ndn)),
                    parent,
                    listed: false,
                },
            );
            for (fingerprint, keys) in
                expected
                    .iter_mut()
                    .zip(entry_keys_all(self.schema(), &specs, &entry))
            {
                for key in keys {
                    fingerprint.add(&key, id);
                }
            }
        }
        progress("entries", read, total);
        summary.entries = read;
        summary.tables.push(("id2entry".into(), read));

        // id2chunk: exactly the chunks the entries' chunk heads list (docs/design/storage.md).
        let (listed, stored) = txn.chunk_counts()?;
        if listed != stored {
            sink.found(
                "id2chunk",
                None,
                None,
                format!("{stored} chunk records, the chunked entries list {listed}"),
            );
        }

        // dn2id: every record names an entry with that DN key.
        let mut read = 0u64;
        for item in txn.raw_pairs(RawTable::Dn2Id)? {
            let (key, raw) = item?;
            read += 1;
            let Some(id) = decode_id(raw) else {
                sink.found(
                    "dn2id",
                    Some(key),
                    None,
                    format!("value is {} bytes, not an 8-byte ID", raw.len()),
                );
                continue;
            };
            match known.get(&id) {
                None => sink.found(
                    "dn2id",
                    Some(key),
                    Some(id),
                    "points to an ID with no (readable) entry in id2entry".into(),
                ),
                Some(k) if k.key_hash != hash_of(key) => {
                    let named = self.dn_of(&txn, id);
                    sink.found(
                        "dn2id",
                        Some(key),
                        Some(id),
                        format!("points to entry {id} ({named}), whose DN has another key"),
                    );
                }
                Some(_) => {}
            }
        }
        summary.tables.push(("dn2id".into(), read));
        progress("dn2id", read, read);

        // dn2children: every pair is (the parent, a child) of an existing entry, each entry listed once.
        let mut read = 0u64;
        for item in txn.raw_pairs(RawTable::Dn2Children)? {
            let (key, raw) = item?;
            read += 1;
            let (Some(parent), Some(child)) = (decode_id(key), decode_id(raw)) else {
                sink.found(
                    "dn2children",
                    Some(key),
                    None,
                    format!(
                        "record of {} and {} bytes, not two 8-byte IDs",
                        key.len(),
                        raw.len()
                    ),
                );
                continue;
            };
            match known.get_mut(&child) {
                None => sink.found(
                    "dn2children",
                    Some(key),
                    Some(child),
                    format!("parent {parent} lists child {child}, which has no entry"),
                ),
                Some(k) if k.parent.is_some_and(|p| p != parent) => {
                    let named = self.dn_of(&txn, child);
                    let real = k.parent.unwrap_or_default();
                    sink.found(
                        "dn2children",
                        Some(key),
                        Some(child),
                        format!("parent {parent} lists {named}, whose parent is {real}"),
                    );
                }
                Some(k) => k.listed = true,
            }
        }
        let mut unlisted: Vec<(u64, u64)> = known
            .iter()
            .filter_map(|(id, k)| match (k.listed, k.parent) {
                (false, Some(parent)) => Some((*id, parent)),
                _ => None,
            })
            .collect();
        unlisted.sort_unstable();
        for (id, parent) in unlisted {
            let named = self.dn_of(&txn, id);
            sink.found(
                "dn2children",
                Some(&parent.to_be_bytes()),
                Some(id),
                format!("entry {named} is missing from the children of its parent {parent}"),
            );
        }
        summary.tables.push(("dn2children".into(), read));
        progress("dn2children", read, read);

        // Indexes: the stored pairs against those the entries give.
        for (spec, want) in specs.iter().zip(&expected) {
            let table = RawTable::Index(&spec.attr).to_string();
            let mut found = Fingerprint::default();
            let mut malformed = false;
            for item in txn.raw_pairs(RawTable::Index(&spec.attr))? {
                let (key, raw) = item?;
                match decode_id(raw) {
                    Some(id) => found.add(key, id),
                    None => malformed = true,
                }
            }
            summary.tables.push((table.clone(), found.count));
            progress(&table, found.count, want.count);
            if found != *want || malformed {
                self.compare_index(&txn, spec, &table, &known, &mut sink)?;
            }
        }
        sink.close();
        summary.problems = sink.total;
        Ok(summary)
    }

    /// The checks of one readable entry; returns its parent's ID (0 for the suffix), None if missing.
    fn check_entry(
        &self,
        txn: &ReadTxn,
        id: u64,
        entry: &Entry,
        sink: &mut Sink<'_>,
    ) -> Result<Option<u64>, StoreError> {
        let dn = entry.dn.to_string();
        match self.schema().normalize_dn(&entry.dn) {
            Ok(now) if now == entry.ndn => {}
            Ok(now) => sink.found(
                "id2entry",
                None,
                Some(id),
                format!(
                    "entry {dn}: stored normalized DN {:?} differs from today's {:?}",
                    entry.ndn.as_str(),
                    now.as_str()
                ),
            ),
            Err(e) => sink.found(
                "id2entry",
                None,
                Some(id),
                format!("entry {dn}: DN does not normalize: {e}"),
            ),
        }
        if !self.holds(&entry.ndn) {
            sink.found(
                "id2entry",
                None,
                Some(id),
                format!("entry {dn} is outside the suffix {}", self.suffix_dn()),
            );
        }
        let key = dn_key(&entry.ndn);
        match txn.get_id(&key)? {
            Some(found) if found == id => {}
            Some(other) => sink.found(
                "dn2id",
                Some(&key),
                Some(id),
                format!("entry {id} ({dn}): its DN key maps to {other} instead"),
            ),
            None => sink.found(
                "dn2id",
                Some(&key),
                Some(id),
                format!("entry {id} ({dn}) has no dn2id record"),
            ),
        }
        if entry.ndn == *self.suffix() {
            return Ok(Some(0));
        }
        let Some(parent) = entry.ndn.parent() else {
            return Ok(None);
        };
        let parent_key = dn_key(&parent);
        match self.id_in(txn, &parent)? {
            Some(parent_id) => Ok(Some(parent_id)),
            None => {
                sink.found(
                    "dn2id",
                    Some(&parent_key),
                    Some(id),
                    format!("the parent of entry {id} ({dn}) is not in dn2id"),
                );
                Ok(None)
            }
        }
    }

    /// The DN of entry `id` for a message, or why there is none.
    fn dn_of(&self, txn: &ReadTxn, id: u64) -> String {
        match txn.get_entry(id) {
            Ok(Some(bytes)) => match StoredEntry::parse(bytes) {
                Ok(stored) => String::from_utf8_lossy(stored.dn).into_owned(),
                Err(_) => "an unreadable entry".into(),
            },
            Ok(None) => "no entry".into(),
            Err(e) => format!("unreadable: {e}"),
        }
    }

    /// Compares one index pair by pair with the keys of every entry (both sorted by key, then ID).
    fn compare_index(
        &self,
        txn: &ReadTxn,
        spec: &IndexSpec,
        table: &str,
        known: &HashMap<u64, Known>,
        sink: &mut Sink<'_>,
    ) -> Result<(), StoreError> {
        let mut want: Vec<(Vec<u8>, u64)> = Vec::new();
        for item in txn.entries()? {
            let (id, bytes) = item?;
            let Ok(entry) = StoredEntry::parse(bytes).and_then(|s| s.to_entry()) else {
                continue;
            };
            want.extend(
                entry_keys(self.schema(), spec, &entry)
                    .into_iter()
                    .map(|k| (k, id)),
            );
        }
        want.sort_unstable();
        let mut want = want.into_iter().peekable();
        let missing = |sink: &mut Sink<'_>, key: &[u8], id: u64| {
            let named = self.dn_of(txn, id);
            sink.found(
                table,
                Some(key),
                Some(id),
                format!(
                    "missing: entry {id} ({named}) has this key (canopy reindex rebuilds indexes)"
                ),
            );
        };
        for item in txn.raw_pairs(RawTable::Index(&spec.attr))? {
            let (key, raw) = item?;
            let Some(id) = decode_id(raw) else {
                sink.found(
                    table,
                    Some(key),
                    None,
                    format!("value is {} bytes, not an 8-byte ID", raw.len()),
                );
                continue;
            };
            let here = (key, id);
            while let Some((k, i)) = want.peek() {
                if (k.as_slice(), *i) < here {
                    missing(sink, k, *i);
                    want.next();
                } else {
                    break;
                }
            }
            if want.peek().is_some_and(|(k, i)| (k.as_slice(), *i) == here) {
                want.next();
                continue;
            }
            let why = if known.contains_key(&id) {
                format!(
                    "lists entry {id} ({}), which has no such key",
                    self.dn_of(txn, id)
                )
            } else {
                format!("lists entry {id}, which does not exist")
            };
            sink.found(table, Some(key), Some(id), why);
        }
        for (k, i) in want {
            missing(sink, &k, i);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_print_readably() {
        let check = |key: &[u8], want: &str| assert_eq!(printable(key), want);
        check(b"\x02bob@example.com", "\\02bob@example.com");
        check(b"\x01dc=com\x00", "\\01dc=com\\00");
        check(b"a\\b", "a\\5cb");
        check(&[0xff, b' '], "\\ff ");
    }

    #[test]
    fn fingerprints_ignore_order_and_see_one_change() {
        let mut a = Fingerprint::default();
        let mut b = Fingerprint::default();
        a.add(b"x", 1);
        a.add(b"y", 2);
        b.add(b"y", 2);
        b.add(b"x", 1);
        assert_eq!(a, b);
        let mut c = Fingerprint::default();
        c.add(b"x", 1);
        c.add(b"y", 3);
        assert_ne!(a, c);
    }
}
