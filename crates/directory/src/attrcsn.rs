//! Per-attribute CSNs for multi-provider conflict resolution: the hidden operational attribute
//! `canopyAttrCSN` that records, for each attribute an entry holds or held (and its DN), the CSN of the
//! write that last changed it; local writes stamp it, and a consumer merges two versions of an entry
//! attribute by attribute with it (docs/design/replication.md, "Per-attribute resolution").

use std::collections::{BTreeMap, BTreeSet};

use canopy_core::{Attribute, Entry};

/// The attribute's name. Its values are `CSN name name ...`: the attributes (lower-case descriptions,
/// options included) whose last change had that CSN, one value per CSN.
pub const ATTR_CSN: &str = "canopyAttrCSN";

/// The name standing for the entry's DN (no attribute description starts with `@`).
pub const DN: &str = "@dn";

/// Attributes that belong to the entry as a whole rather than to one change: taken from the version
/// with the higher entryCSN (entryCSN itself is then the higher of the two), never stamped.
const WHOLE: [&str; 7] = [
    "entrycsn",
    "modifiersname",
    "modifytimestamp",
    "entryuuid",
    "creatorsname",
    "createtimestamp",
    "canopyattrcsn",
];

fn whole(desc: &str) -> bool {
    WHOLE.contains(&desc.to_ascii_lowercase().as_str())
}

/// The CSN of the last change of each attribute (lower-case description) and of the DN ([`DN`]).
pub type Stamps = BTreeMap<String, String>;

/// The entry's entryCSN as text.
pub(crate) fn csn_of(entry: &Entry) -> Option<String> {
    let value = entry.get("entryCSN")?.values.first()?;
    String::from_utf8(value.clone()).ok()
}

/// The stamps an entry carries, None when it carries none (written by slapd, imported, or made before
/// the database was multi-provider). A value that does not parse is ignored.
pub fn stamps(entry: &Entry) -> Option<Stamps> {
    let attr = entry.get(ATTR_CSN)?;
    let mut stamps = Stamps::new();
    for value in &attr.values {
        let Ok(text) = std::str::from_utf8(value) else {
            continue;
        };
        let mut words = text.split(' ');
        let Some(csn) = words
            .next()
            .filter(|c| canopy_proto::sync::Csn::parse(c).is_some())
        else {
            continue;
        };
        for name in words.filter(|w| !w.is_empty()) {
            let slot = stamps.entry(name.to_ascii_lowercase()).or_default();
            if csn > slot.as_str() {
                *slot = csn.to_string();
            }
        }
    }
    Some(stamps)
}

/// The stamps of an entry, or for one without any, the implicit ones: every attribute it holds and
/// its DN were last changed at the latest by its entryCSN.
pub fn stamps_or_implicit(entry: &Entry) -> Stamps {
    if let Some(stamps) = stamps(entry) {
        return stamps;
    }
    let csn = csn_of(entry).unwrap_or_default();
    entry
        .attrs
        .iter()
        .filter(|a| !whole(&a.desc))
        .map(|a| a.desc.to_ascii_lowercase())
        .chain(std::iter::once(DN.to_string()))
        .map(|name| (name, csn.clone()))
        .collect()
}

/// Stores `stamps` in `entry`, one value per CSN (ascending), names sorted: the same stamps give the
/// same bytes on every server.
pub fn set_stamps(entry: &mut Entry, stamps: &Stamps) {
    let mut by_csn: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, csn) in stamps {
        if !csn.is_empty() {
            by_csn.entry(csn).or_default().insert(name);
        }
    }
    let values: Vec<Vec<u8>> = by_csn
        .into_iter()
        .map(|(csn, names)| {
            let mut text = csn.to_string();
            for name in names {
                text.push(' ');
                text.push_str(name);
            }
            text.into_bytes()
        })
        .collect();
    entry
        .attrs
        .retain(|a| !a.desc.eq_ignore_ascii_case(ATTR_CSN));
    if !values.is_empty() {
        entry.attrs.push(Attribute {
            desc: ATTR_CSN.to_string(),
            values,
        });
    }
}

fn find<'e>(entry: &'e Entry, name: &str) -> Option<&'e Attribute> {
    entry
        .attrs
        .iter()
        .find(|a| a.desc.eq_ignore_ascii_case(name))
}

/// Whether two versions of an attribute hold the same values, in any order, without copying them
/// (a group of thousands of members gaining one is compared by length first).
fn same_values(a: Option<&Attribute>, b: Option<&Attribute>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            if a.values.len() != b.values.len() {
                return false;
            }
            if a.values == b.values {
                return true;
            }
            let mut x: Vec<&Vec<u8>> = a.values.iter().collect();
            let mut y: Vec<&Vec<u8>> = b.values.iter().collect();
            x.sort_unstable();
            y.sort_unstable();
            x == y
        }
        _ => false,
    }
}

fn names(entry: &Entry) -> impl Iterator<Item = String> + '_ {
    entry
        .attrs
        .iter()
        .filter(|a| !whole(&a.desc))
        .map(|a| a.desc.to_ascii_lowercase())
}

/// Stamps `new` for a write with CSN `csn` that turned `old` (None for an add) into it: every
/// attribute whose values changed (added, replaced or deleted: a deleted attribute keeps its stamp)
/// and the DN when it changed get `csn`; the rest keep the stamps `old` had (or its implicit ones).
pub fn stamp_write(old: Option<&Entry>, new: &mut Entry, csn: &str) {
    let mut stamps = match old {
        Some(old) => stamps_or_implicit(old),
        None => Stamps::new(),
    };
    let mut changed: BTreeSet<String> = names(new).collect();
    if let Some(old) = old {
        changed.extend(names(old));
        changed.retain(|name| !same_values(find(old, name), find(new, name)));
        if old.ndn != new.ndn || old.dn.to_string() != new.dn.to_string() {
            changed.insert(DN.to_string());
        }
    } else {
        changed.insert(DN.to_string());
    }
    for name in changed {
        stamps.insert(name, csn.to_string());
    }
    set_stamps(new, &stamps);
}

/// What merging a received version into the held one gives.
#[derive(Debug)]
pub enum Merge {
    /// The held entry already has everything the received one brings (a change seen already).
    Unchanged,
    /// The entry to store.
    Merged(Entry),
}

/// Merges `received` (which carries stamps) into `held`, attribute by attribute: each attribute (and
/// the DN) comes from the version whose stamp for it is higher; on a tie (an attribute changed without
/// a stamp) from the version with the higher entryCSN, and the DN stays the held one (a tie there
/// means an ancestor was renamed, which conflict rule 4 settles). The entry-wide attributes
/// (entryCSN, modifiersName, modifyTimestamp ...) come from the version with the higher entryCSN, and
/// the stamps are the higher of each. The result depends only on the two versions, not on which one
/// is held: merging is commutative, associative and idempotent, so every server ends identical
/// whatever order the versions reach it in.
pub fn merge(held: &Entry, received: &Entry) -> Merge {
    let hs = stamps_or_implicit(held);
    let rs = stamps_or_implicit(received);
    let held_csn = csn_of(held).unwrap_or_default();
    let received_csn = csn_of(received).unwrap_or_default();
    let newer_is_received = received_csn > held_csn;
    let (newer, older) = if newer_is_received {
        (received, held)
    } else {
        (held, received)
    };
    let stamp = |s: &Stamps, name: &str| s.get(name).cloned().unwrap_or_default();
    let mut merged = Entry {
        dn: held.dn.clone(),
        ndn: held.ndn.clone(),
        attrs: newer
            .attrs
            .iter()
            .filter(|a| whole(&a.desc) && !a.desc.eq_ignore_ascii_case(ATTR_CSN))
            .cloned()
            .collect(),
    };
    if stamp(&rs, DN) > stamp(&hs, DN) {
        merged.dn = received.dn.clone();
        merged.ndn = received.ndn.clone();
    }
    let mut all: Vec<String> = Vec::new();
    for name in names(newer).chain(names(older)) {
        if !all.contains(&name) {
            all.push(name);
        }
    }
    for name in hs.keys().chain(rs.keys()) {
        if name != DN && !whole(name) && !all.contains(name) {
            all.push(name.clone());
        }
    }
    for name in &all {
        let (h, r) = (stamp(&hs, name), stamp(&rs, name));
        let from = match r.cmp(&h) {
            std::cmp::Ordering::Greater => received,
            std::cmp::Ordering::Less => held,
            std::cmp::Ordering::Equal => newer,
        };
        if let Some(attr) = from
            .attrs
            .iter()
            .find(|a| a.desc.eq_ignore_ascii_case(name))
        {
            merged.attrs.push(attr.clone());
        }
    }
    // The newer version's attribute order, then the others by name: the same bytes on every server.
    let rank = |desc: &str| {
        newer
            .attrs
            .iter()
            .position(|a| a.desc.eq_ignore_ascii_case(desc))
            .unwrap_or(usize::MAX)
    };
    merged.attrs.sort_by(|a, b| {
        rank(&a.desc).cmp(&rank(&b.desc)).then_with(|| {
            a.desc
                .to_ascii_lowercase()
                .cmp(&b.desc.to_ascii_lowercase())
        })
    });
    let mut stamps = hs;
    for (name, csn) in rs {
        let slot = stamps.entry(name).or_default();
        if csn > *slot {
            *slot = csn;
        }
    }
    set_stamps(&mut merged, &stamps);
    if same(&merged, held) {
        Merge::Unchanged
    } else {
        Merge::Merged(merged)
    }
}

/// Whether two versions hold the same DN and the same values of the same attributes (in any order).
pub fn same(a: &Entry, b: &Entry) -> bool {
    a.ndn == b.ndn
        && a.attrs.len() == b.attrs.len()
        && a.dn.to_string() == b.dn.to_string()
        && a.attrs
            .iter()
            .all(|x| same_values(Some(x), find(b, &x.desc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dn: &str, attrs: &[(&str, &[&str])]) -> Entry {
        Entry {
            dn: canopy_proto::Dn::parse(dn.as_bytes()).unwrap(),
            ndn: canopy_schema::NormDn::root(),
            attrs: attrs
                .iter()
                .map(|(d, v)| Attribute {
                    desc: d.to_string(),
                    values: v.iter().map(|x| x.as_bytes().to_vec()).collect(),
                })
                .collect(),
        }
    }

    const C1: &str = "20261127070000.000000Z#000000#001#000000";
    const C2: &str = "20261127070001.000000Z#000000#002#000000";
    const C3: &str = "20261127070002.000000Z#000000#003#000000";

    #[test]
    fn stamps_round_trip_and_group_by_csn() {
        let mut e = entry("cn=a,dc=example,dc=com", &[("cn", &["a"]), ("sn", &["b"])]);
        stamp_write(None, &mut e, C1);
        assert_eq!(
            e.get(ATTR_CSN).unwrap().values,
            vec![format!("{C1} @dn cn sn").into_bytes()]
        );
        let mut m = e.clone();
        m.get_mut("sn").unwrap().values = vec![b"c".to_vec()];
        m.attrs.push(Attribute {
            desc: "entryCSN".into(),
            values: vec![C2.as_bytes().to_vec()],
        });
        stamp_write(Some(&e), &mut m, C2);
        let s = stamps(&m).unwrap();
        assert_eq!(s["sn"], C2);
        assert_eq!(s["cn"], C1);
        assert_eq!(s[DN], C1);
        // A deleted attribute keeps its stamp.
        let mut d = m.clone();
        d.attrs.retain(|a| a.desc != "sn");
        stamp_write(Some(&m), &mut d, C3);
        assert_eq!(stamps(&d).unwrap()["sn"], C3);
        assert!(d.get("sn").is_none());
    }

    #[test]
    fn unstamped_entries_have_implicit_stamps() {
        let e = entry(
            "cn=a,dc=example,dc=com",
            &[("cn", &["a"]), ("entryCSN", &[C2])],
        );
        let s = stamps_or_implicit(&e);
        assert_eq!(s["cn"], C2);
        assert_eq!(s[DN], C2);
        assert!(!s.contains_key("entrycsn"));
    }

    #[test]
    fn a_damaged_value_is_ignored() {
        let e = entry(
            "cn=a,dc=example,dc=com",
            &[(ATTR_CSN, &["garbage cn", &format!("{C1} sn")])],
        );
        let s = stamps(&e).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s["sn"], C1);
    }
}
