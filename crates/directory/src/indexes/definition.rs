//! The stored form of an index definition (meta table, docs/design/storage.md "meta").

use canopy_core::index::IndexSpec;

/// Present once the store records its index definitions (value `01`).
pub(crate) const RECORDED: &[u8] = b"index.recorded";
/// Prefix of a definition's key; the attribute name in ASCII lower case follows.
pub(crate) const DEFINITION_PREFIX: &[u8] = b"index.def.";
/// Layout version of a definition's value.
const VERSION: u8 = 1;

const EQ: u8 = 1;
const PRES: u8 = 2;
const SUB: u8 = 4;
const ORD: u8 = 8;
const APPROX: u8 = 16;

/// Where an index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexState {
    /// Kept by every write and being filled for the existing entries; not used by the planner.
    Building,
    /// Holds the keys of every entry; the planner uses it.
    Complete,
    /// Configured but not yet recorded in the store (until the server starts the builds).
    Pending,
}

impl IndexState {
    pub fn as_str(self) -> &'static str {
        match self {
            IndexState::Building => "building",
            IndexState::Complete => "complete",
            IndexState::Pending => "pending",
        }
    }
}

/// One stored index definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) spec: IndexSpec,
    /// `Building` or `Complete` (never `Pending`).
    pub(crate) state: IndexState,
    /// While building: the lowest entry ID not yet visited.
    pub(crate) next: u64,
}

pub(crate) fn definition_key(attr: &str) -> Vec<u8> {
    let mut key = DEFINITION_PREFIX.to_vec();
    key.extend_from_slice(attr.to_ascii_lowercase().as_bytes());
    key
}

/// `eq,pres,sub,ord,approx` as configured (slapd's `index` keywords).
pub fn kinds_text(spec: &IndexSpec) -> String {
    let kinds = [
        (spec.eq, "eq"),
        (spec.pres, "pres"),
        (spec.sub, "sub"),
        (spec.ord, "ord"),
        (spec.approx, "approx"),
    ];
    kinds
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(",")
}

impl Definition {
    /// `01` version, kinds (bits: eq 1, pres 2, sub 4, ord 8, approx 16), state (`00` building, `01`
    /// complete), next ID (u64 BE), then the attribute's canonical name.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let spec = &self.spec;
        let kinds = [
            (spec.eq, EQ),
            (spec.pres, PRES),
            (spec.sub, SUB),
            (spec.ord, ORD),
            (spec.approx, APPROX),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0u8, |bits, (_, bit)| bits | bit);
        let state = match self.state {
            IndexState::Complete => 1,
            IndexState::Building | IndexState::Pending => 0,
        };
        let mut out = vec![VERSION, kinds, state];
        out.extend_from_slice(&self.next.to_be_bytes());
        out.extend_from_slice(spec.attr.as_bytes());
        out
    }

    pub(crate) fn decode(raw: &[u8]) -> Option<Definition> {
        let (&[version, kinds, state], rest) = raw.split_first_chunk::<3>()?;
        let (next, name) = rest.split_first_chunk::<8>()?;
        if version != VERSION || kinds == 0 || kinds & !(EQ | PRES | SUB | ORD | APPROX) != 0 {
            return None;
        }
        let state = match state {
            0 => IndexState::Building,
            1 => IndexState::Complete,
            _ => return None,
        };
        let attr = std::str::from_utf8(name).ok()?;
        if attr.is_empty() {
            return None;
        }
        Some(Definition {
            spec: IndexSpec {
                attr: attr.to_string(),
                eq: kinds & EQ != 0,
                pres: kinds & PRES != 0,
                sub: kinds & SUB != 0,
                ord: kinds & ORD != 0,
                approx: kinds & APPROX != 0,
            },
            state,
            next: u64::from_be_bytes(*next),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(attr: &str, eq: bool, sub: bool) -> IndexSpec {
        IndexSpec {
            attr: attr.into(),
            eq,
            pres: false,
            sub,
            ord: false,
            approx: false,
        }
    }

    #[test]
    fn definitions_round_trip_and_bad_ones_are_refused() {
        for def in [
            Definition {
                spec: spec("mail", true, true),
                state: IndexState::Building,
                next: 12_345,
            },
            Definition {
                spec: spec("employeeNumber", true, false),
                state: IndexState::Complete,
                next: 0,
            },
        ] {
            assert_eq!(Definition::decode(&def.encode()), Some(def.clone()));
        }
        let good = Definition {
            spec: spec("cn", true, false),
            state: IndexState::Building,
            next: 7,
        }
        .encode();
        let check = |raw: &[u8]| Definition::decode(raw);
        assert_eq!(check(&[]), None);
        assert_eq!(check(&good[..11]), None, "no name");
        let mut bad = good.clone();
        bad[0] = 2;
        assert_eq!(check(&bad), None, "version");
        let mut bad = good.clone();
        bad[1] = 0;
        assert_eq!(check(&bad), None, "no kinds");
        let mut bad = good.clone();
        bad[2] = 9;
        assert_eq!(check(&bad), None, "state");
        assert_eq!(kinds_text(&spec("cn", true, true)), "eq,sub");
        assert_eq!(definition_key("Mail"), b"index.def.mail");
    }
}
