//! Normalizes two servers' outcomes for one request and lists how they differ: entries as a set
//! keyed by DN, attribute names case-insensitively, values as sorted multisets, volatile
//! operational values by presence only, result codes exactly, matched DNs normalized.

use crate::client::{Outcome, Status};
use canopy_proto::{Dn, SearchResultEntry};
use std::collections::BTreeMap;
use std::fmt;

/// Operational attributes whose values legitimately differ between two servers (generated
/// identifiers and clocks); only their presence and value count are compared.
const VOLATILE: &[&str] = &[
    "entryuuid",
    "entrycsn",
    "createtimestamp",
    "modifytimestamp",
];

/// Operational attributes left out of the comparison altogether. contextCSN: every Canopy database is a
/// syncrepl provider (syncprov built in, docs/compatibility.md), so its suffix entry carries one from
/// the import on, while the reference slapd runs without `overlay syncprov` and has none.
const NOT_COMPARED: &[&str] = &["contextcsn"];

/// What kind of difference, for the summary and for grouping by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// One server gave no LDAP answer (connection failure, timeout, undecodable response).
    Transport,
    ResultCode,
    MatchedDn,
    Referral,
    /// Entry returned by slapd only.
    MissingEntry,
    /// Entry returned by canopy only.
    ExtraEntry,
    /// Same entry (by normalized DN), different DN string.
    DnForm,
    /// Attribute present in one answer only.
    Attribute,
    /// Same attribute, different values.
    Values,
    /// Search continuation references.
    References,
    /// Number of entries under sizeLimitExceeded (which entries is up to the server).
    EntryCount,
    /// Response controls (which ones; the pre-read/post-read entries).
    ResponseControl,
    /// An extended response's name or value.
    ExtendedResponse,
    /// The number of pages of a paged search.
    Pages,
    /// The order of a sorted search's entries.
    Order,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Kind::Transport => "transport",
            Kind::ResultCode => "result code",
            Kind::MatchedDn => "matched DN",
            Kind::Referral => "referral",
            Kind::MissingEntry => "entry missing in canopy",
            Kind::ExtraEntry => "extra entry in canopy",
            Kind::DnForm => "DN string form",
            Kind::Attribute => "attribute presence",
            Kind::Values => "attribute values",
            Kind::References => "search references",
            Kind::EntryCount => "entry count under size limit",
            Kind::ResponseControl => "response control",
            Kind::ExtendedResponse => "extended response",
            Kind::Pages => "page count",
            Kind::Order => "entry order",
        };
        f.write_str(s)
    }
}

/// One line of a difference report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub kind: Kind,
    pub detail: String,
}

/// A returned entry after normalization.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NormEntry {
    /// The DN exactly as the server sent it.
    pub raw_dn: Vec<u8>,
    /// Lower-cased attribute description -> sorted values (volatile ones replaced by a marker).
    pub attrs: BTreeMap<String, Vec<Vec<u8>>>,
}

/// An outcome after normalization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Normalized {
    Search {
        status: NormStatus,
        /// Keyed by normalized DN.
        entries: BTreeMap<String, NormEntry>,
        references: Vec<Vec<String>>,
        /// The normalized DNs in the order sent: compared when the search was sorted.
        order: Vec<String>,
    },
    Done(NormStatus),
    Pages(Vec<Normalized>),
    Failed(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormStatus {
    pub code: u32,
    pub matched_dn: String,
    pub referral: Vec<String>,
    /// Response controls by OID, sorted; pre-read and post-read values decoded to an entry
    /// (other values, such as paged-results cookies, legitimately differ and are left out).
    pub controls: Vec<(String, Option<NormEntry>)>,
    /// An extended response's name and value; a value `dn:DN` (WhoAmI) with its DN normalized.
    pub extended: Option<(Option<String>, String)>,
}

pub fn normalize(outcome: &Outcome) -> Normalized {
    match outcome {
        Outcome::Failed(why) => Normalized::Failed(why.clone()),
        Outcome::Done(s) => Normalized::Done(norm_status(s)),
        Outcome::Pages(pages) => Normalized::Pages(pages.iter().map(normalize).collect()),
        Outcome::Search {
            entries,
            references,
            status,
        } => {
            let mut map = BTreeMap::new();
            let mut order = Vec::new();
            for e in entries {
                let mut key = normalize_dn(&e.dn);
                order.push(key.clone());
                if map.contains_key(&key) {
                    // An entry returned twice stays visible as an extra one.
                    key = format!("{key} <sent again>");
                }
                map.insert(key, norm_entry(e));
            }
            let mut references: Vec<Vec<String>> = references
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    r.sort();
                    r
                })
                .collect();
            references.sort();
            Normalized::Search {
                status: norm_status(status),
                entries: map,
                references,
                order,
            }
        }
    }
}

fn norm_status(s: &Status) -> NormStatus {
    let mut referral = s.referral.clone();
    referral.sort();
    let mut controls: Vec<(String, Option<NormEntry>)> = s
        .controls
        .iter()
        .map(|c| {
            let entry = match (c.oid.as_str(), &c.value) {
                (PRE_READ | POST_READ, Some(v)) => {
                    Some(crate::rawber::decode_entry(v).map_or_else(
                        || NormEntry {
                            raw_dn: b"<undecodable entry>".to_vec(),
                            attrs: BTreeMap::new(),
                        },
                        |e| {
                            let mut entry = norm_entry(&e);
                            // SCRAM secrets canopy keeps beside a password it hashed
                            // (docs/compatibility.md), as in search entries.
                            entry.attrs.remove("authpassword");
                            entry
                        },
                    ))
                }
                _ => None,
            };
            // A sort or VLV response is compared by its values too (not the VLV context).
            let oid = match crate::sorting::response_summary(&c.oid, c.value.as_deref()) {
                Some(summary) => format!("{} {summary}", c.oid),
                None => c.oid.clone(),
            };
            (oid, entry)
        })
        .collect();
    controls.sort_by(|a, b| a.0.cmp(&b.0));
    let extended = s.extended.as_ref().map(|(name, value)| {
        let value = match value.as_deref() {
            None => "<none>".to_string(),
            Some(v) => match v.strip_prefix(b"dn:") {
                Some(dn) => format!("dn:{}", normalize_dn(dn)),
                None => lossy(v),
            },
        };
        (name.clone(), value)
    });
    NormStatus {
        code: s.code,
        matched_dn: normalize_dn(&s.matched_dn),
        referral,
        controls,
        extended,
    }
}

/// RFC 2891's sort response control.
const SORT_RESPONSE: &str = canopy_proto::sort::CONTROL_SORT_RESPONSE;

/// RFC 4527 response controls.
const PRE_READ: &str = "1.3.6.1.1.13.1";
const POST_READ: &str = "1.3.6.1.1.13.2";

fn norm_entry(e: &SearchResultEntry) -> NormEntry {
    let mut attrs: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    for a in &e.attributes {
        let name = a.name.to_ascii_lowercase();
        if NOT_COMPARED.contains(&name.as_str()) {
            continue;
        }
        if attrs.contains_key(&name) {
            // The same description twice in one entry: merged below, but flagged so it shows.
            attrs.insert(format!("<{name} sent twice>"), Vec::new());
        }
        let slot = attrs.entry(name.clone()).or_default();
        if VOLATILE.contains(&name.as_str()) {
            slot.extend(a.values.iter().map(|_| b"<volatile>".to_vec()));
        } else {
            slot.extend(a.values.iter().cloned());
        }
    }
    for values in attrs.values_mut() {
        values.sort();
    }
    NormEntry {
        raw_dn: e.dn.clone(),
        attrs,
    }
}

/// A DN in a form where spelling differences that do not change its meaning vanish: attribute
/// types and values lower-cased, insignificant spaces removed, one canonical escaping. This is an
/// approximation of the schema's DN matching, good enough to pair the same entry from two servers.
pub fn normalize_dn(dn: &[u8]) -> String {
    match Dn::parse(dn) {
        Ok(parsed) => {
            let rdns: Vec<String> = parsed
                .rdns
                .iter()
                .map(|rdn| {
                    let mut avas: Vec<String> = rdn
                        .avas
                        .iter()
                        .map(|ava| {
                            let v = String::from_utf8_lossy(&ava.value).to_lowercase();
                            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                            format!("{}={}", ava.attr.to_ascii_lowercase(), escape_value(&v))
                        })
                        .collect();
                    avas.sort();
                    avas.join("+")
                })
                .collect();
            rdns.join(",")
        }
        Err(_) => format!("<unparsable>{}", String::from_utf8_lossy(dn)),
    }
}

fn escape_value(v: &str) -> String {
    let mut out = String::new();
    for c in v.chars() {
        if matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';' | '=' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Every difference between slapd's (`reference`) and canopy's (`candidate`) answer.
pub fn diff(reference: &Outcome, candidate: &Outcome) -> Vec<Difference> {
    diff_normalized(&normalize(reference), &normalize(candidate))
}

pub fn diff_normalized(reference: &Normalized, candidate: &Normalized) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut push = |kind, detail: String| out.push(Difference { kind, detail });
    match (reference, candidate) {
        (Normalized::Failed(a), Normalized::Failed(b)) => {
            if a != b {
                push(Kind::Transport, format!("slapd: {a}; canopy: {b}"));
            }
        }
        (Normalized::Failed(a), b) => push(
            Kind::Transport,
            format!("slapd failed ({a}), canopy answered {}", summary(b)),
        ),
        (a, Normalized::Failed(b)) => push(
            Kind::Transport,
            format!("canopy failed ({b}), slapd answered {}", summary(a)),
        ),
        (Normalized::Done(a), Normalized::Done(b)) => diff_status(a, b, &mut push),
        (Normalized::Pages(a), Normalized::Pages(b)) => {
            if a.len() != b.len() {
                push(
                    Kind::Pages,
                    format!(
                        "slapd answered in {} pages ({}), canopy in {} ({})",
                        a.len(),
                        pages_summary(a),
                        b.len(),
                        pages_summary(b)
                    ),
                );
            }
            for (i, (pa, pb)) in a.iter().zip(b).enumerate() {
                for d in diff_normalized(pa, pb) {
                    push(d.kind, format!("page {}: {}", i + 1, d.detail));
                }
            }
        }
        (
            Normalized::Search {
                status: sa,
                entries: ea,
                references: ra,
                order: oa,
            },
            Normalized::Search {
                status: sb,
                entries: eb,
                references: rb,
                order: ob,
            },
        ) => {
            diff_status(sa, sb, &mut push);
            let sorted = |s: &NormStatus| s.controls.iter().any(|c| c.0.starts_with(SORT_RESPONSE));
            if sorted(sa) && sorted(sb) && oa != ob {
                push(Kind::Order, format!("slapd: {oa:?}\n      canopy: {ob:?}"));
            }
            if ra != rb {
                push(
                    Kind::References,
                    format!("slapd: {ra:?}\n      canopy: {rb:?}"),
                );
            }
            // Under a size limit each server may pick different entries; only the count is fixed.
            if sa.code == 4 && sb.code == 4 {
                if ea.len() != eb.len() {
                    push(
                        Kind::EntryCount,
                        format!("slapd returned {}, canopy {}", ea.len(), eb.len()),
                    );
                }
            } else {
                diff_entries(ea, eb, &mut push);
            }
        }
        (a, b) => push(
            Kind::ResultCode,
            format!("slapd {}, canopy {}", summary(a), summary(b)),
        ),
    }
    out
}

/// One line about an outcome, for verbose listings.
pub fn brief(outcome: &Outcome) -> String {
    summary(&normalize(outcome))
}

fn summary(n: &Normalized) -> String {
    match n {
        Normalized::Search {
            status, entries, ..
        } => format!("code {} with {} entries", status.code, entries.len()),
        Normalized::Done(s) => format!("code {}", s.code),
        Normalized::Pages(pages) => format!("{} pages: {}", pages.len(), pages_summary(pages)),
        Normalized::Failed(why) => format!("no answer ({why})"),
    }
}

fn pages_summary(pages: &[Normalized]) -> String {
    pages.iter().map(summary).collect::<Vec<_>>().join("; ")
}

fn diff_status(a: &NormStatus, b: &NormStatus, push: &mut impl FnMut(Kind, String)) {
    if a.code != b.code {
        push(
            Kind::ResultCode,
            format!(
                "slapd {} ({}), canopy {} ({})",
                a.code,
                code_name(a.code),
                b.code,
                code_name(b.code)
            ),
        );
    }
    if a.matched_dn != b.matched_dn {
        push(
            Kind::MatchedDn,
            format!("slapd {:?}, canopy {:?}", a.matched_dn, b.matched_dn),
        );
    }
    if a.referral != b.referral {
        push(
            Kind::Referral,
            format!("slapd {:?}, canopy {:?}", a.referral, b.referral),
        );
    }
    if a.extended != b.extended {
        push(
            Kind::ExtendedResponse,
            format!("slapd {:?}, canopy {:?}", a.extended, b.extended),
        );
    }
    let oids = |s: &NormStatus| s.controls.iter().map(|c| c.0.clone()).collect::<Vec<_>>();
    if oids(a) != oids(b) {
        push(
            Kind::ResponseControl,
            format!(
                "response controls: slapd {:?}, canopy {:?}",
                oids(a),
                oids(b)
            ),
        );
    } else {
        for ((oid, ea), (_, eb)) in a.controls.iter().zip(&b.controls) {
            if let (Some(ea), Some(eb)) = (ea, eb) {
                if ea != eb {
                    // Compared as search entries are (a cleartext password of slapd's that canopy's
                    // hash verifies is the same value): only what differs then is reported.
                    let mut a_map = BTreeMap::new();
                    a_map.insert(String::new(), ea.clone());
                    let mut b_map = BTreeMap::new();
                    b_map.insert(String::new(), eb.clone());
                    let mut found = Vec::new();
                    diff_entries(&a_map, &b_map, &mut |kind, text| found.push((kind, text)));
                    if !found.is_empty() {
                        push(
                            Kind::ResponseControl,
                            format!(
                                "{oid} entry: slapd {} {:?}, canopy {} {:?}",
                                lossy(&ea.raw_dn),
                                ea.attrs.keys().collect::<Vec<_>>(),
                                lossy(&eb.raw_dn),
                                eb.attrs.keys().collect::<Vec<_>>()
                            ),
                        );
                    }
                    for (kind, text) in found {
                        push(kind, text);
                    }
                }
            }
        }
    }
}

fn diff_entries(
    a: &BTreeMap<String, NormEntry>,
    b: &BTreeMap<String, NormEntry>,
    push: &mut impl FnMut(Kind, String),
) {
    for (dn, ea) in a {
        let Some(eb) = b.get(dn) else {
            push(Kind::MissingEntry, lossy(&ea.raw_dn));
            continue;
        };
        if ea.raw_dn != eb.raw_dn {
            push(
                Kind::DnForm,
                format!(
                    "slapd {:?}, canopy {:?}",
                    lossy(&ea.raw_dn),
                    lossy(&eb.raw_dn)
                ),
            );
        }
        for (name, va) in &ea.attrs {
            match eb.attrs.get(name) {
                Some(vb) if is_user_password(name) && passwords_match(va, vb) => {}
                None => push(
                    Kind::Attribute,
                    format!(
                        "{}: {name} only from slapd {}",
                        lossy(&ea.raw_dn),
                        values(va)
                    ),
                ),
                Some(vb) if va != vb && same_dns(va, vb) => push(
                    Kind::DnForm,
                    format!("{name} values: slapd {}, canopy {}", values(va), values(vb)),
                ),
                Some(vb) if va != vb => push(
                    Kind::Values,
                    format!(
                        "{}: {name}\n        slapd  {}\n        canopy {}",
                        lossy(&ea.raw_dn),
                        values(va),
                        values(vb)
                    ),
                ),
                Some(_) => {}
            }
        }
        for (name, vb) in &eb.attrs {
            // SCRAM secrets canopy keeps beside a password it hashed (docs/compatibility.md).
            if name == "authpassword" {
                continue;
            }
            if !ea.attrs.contains_key(name) {
                push(
                    Kind::Attribute,
                    format!(
                        "{}: {name} only from canopy {}",
                        lossy(&eb.raw_dn),
                        values(vb)
                    ),
                );
            }
        }
    }
    for (dn, eb) in b {
        if !a.contains_key(dn) {
            push(Kind::ExtraEntry, lossy(&eb.raw_dn));
        }
    }
}

fn is_user_password(name: &str) -> bool {
    name.split(';').next() == Some("userpassword")
}

/// Canopy stores a cleartext password written by a client hashed, where slapd (without the ppolicy
/// overlay's hashing) keeps it as written (docs/compatibility.md). The values agree when each slapd value
/// is a canopy value, or is cleartext that one of canopy's hashes verifies.
fn passwords_match(slapd: &[Vec<u8>], canopy: &[Vec<u8>]) -> bool {
    if slapd.len() != canopy.len() {
        return false;
    }
    let mut unused: Vec<&Vec<u8>> = canopy.iter().collect();
    slapd.iter().all(|sv| {
        let found = unused.iter().position(|cv| {
            *cv == sv
                || (!sv.starts_with(b"{")
                    && cv.starts_with(b"{")
                    && canopy_password::verify(cv, sv).unwrap_or(false))
        });
        found.map(|i| unused.swap_remove(i)).is_some()
    })
}

/// Whether two value lists are the same DNs spelled differently (so the difference has the same
/// cause as a DN string form difference and is reported with those).
fn same_dns(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
    let norm = |vs: &[Vec<u8>]| -> Option<Vec<String>> {
        let mut out = Vec::new();
        for v in vs {
            // Only values that look like DNs: an `=` and a successful parse.
            if !v.contains(&b'=') || Dn::parse(v).is_err() {
                return None;
            }
            out.push(normalize_dn(v));
        }
        out.sort();
        Some(out)
    };
    match (norm(a), norm(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn lossy(v: &[u8]) -> String {
    String::from_utf8_lossy(v).into_owned()
}

/// Values for a report line; binary ones by length, long lists abbreviated.
fn values(vs: &[Vec<u8>]) -> String {
    const MAX: usize = 6;
    let shown: Vec<String> = vs
        .iter()
        .take(MAX)
        .map(|v| match std::str::from_utf8(v) {
            Ok(s) if !s.chars().any(char::is_control) && s.len() <= 120 => format!("{s:?}"),
            _ => format!("<{} bytes>", v.len()),
        })
        .collect();
    let more = if vs.len() > MAX {
        format!(" +{} more", vs.len() - MAX)
    } else {
        String::new()
    };
    format!("[{}]{more}", shown.join(", "))
}

/// RFC 4511 names of the result codes that appear in practice.
pub fn code_name(code: u32) -> &'static str {
    match code {
        0 => "success",
        1 => "operationsError",
        2 => "protocolError",
        3 => "timeLimitExceeded",
        4 => "sizeLimitExceeded",
        5 => "compareFalse",
        6 => "compareTrue",
        7 => "authMethodNotSupported",
        10 => "referral",
        11 => "adminLimitExceeded",
        12 => "unavailableCriticalExtension",
        16 => "noSuchAttribute",
        17 => "undefinedAttributeType",
        18 => "inappropriateMatching",
        19 => "constraintViolation",
        20 => "attributeOrValueExists",
        21 => "invalidAttributeSyntax",
        32 => "noSuchObject",
        33 => "aliasProblem",
        34 => "invalidDNSyntax",
        36 => "aliasDereferencingProblem",
        48 => "inappropriateAuthentication",
        49 => "invalidCredentials",
        50 => "insufficientAccessRights",
        53 => "unwillingToPerform",
        54 => "loopDetect",
        64 => "namingViolation",
        65 => "objectClassViolation",
        66 => "notAllowedOnNonLeaf",
        67 => "notAllowedOnRDN",
        68 => "entryAlreadyExists",
        69 => "objectClassModsProhibited",
        80 => "other",
        122 => "assertionFailed",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::{PartialAttribute, SearchResultEntry};

    fn entry(dn: &str, attrs: &[(&str, &[&str])]) -> SearchResultEntry {
        SearchResultEntry {
            dn: dn.as_bytes().to_vec(),
            attributes: attrs
                .iter()
                .map(|(n, vs)| PartialAttribute {
                    name: n.to_string(),
                    values: vs.iter().map(|v| v.as_bytes().to_vec()).collect(),
                })
                .collect(),
        }
    }

    fn search(code: u32, entries: Vec<SearchResultEntry>) -> Outcome {
        Outcome::Search {
            entries,
            references: Vec::new(),
            status: Status {
                code,
                ..Status::default()
            },
        }
    }

    fn kinds(a: &Outcome, b: &Outcome) -> Vec<Kind> {
        diff(a, b).into_iter().map(|d| d.kind).collect()
    }

    #[test]
    fn equal_after_normalization() {
        let a = search(
            0,
            vec![
                entry("cn=a,dc=x", &[("cn", &["a", "b"]), ("entryUUID", &["1"])]),
                entry("cn=b,dc=x", &[("sn", &["s"])]),
            ],
        );
        // Other entry order, other value order, other attribute name case, other volatile value.
        let b = search(
            0,
            vec![
                entry("cn=b,dc=x", &[("SN", &["s"])]),
                entry("cn=a,dc=x", &[("entryuuid", &["2"]), ("CN", &["b", "a"])]),
            ],
        );
        assert_eq!(kinds(&a, &b), vec![]);
    }

    #[test]
    fn cleartext_passwords_match_the_hash_canopy_stored() {
        // {SSHA} of "alice-pw" with the salt "salt".
        let hash = "{SSHA}NDE6IsjnHPszvqVxrmbZOYWXUcxzYWx0";
        assert!(canopy_password::verify(hash.as_bytes(), b"alice-pw").unwrap());
        let slapd = search(
            0,
            vec![entry("uid=a,dc=x", &[("userPassword", &["alice-pw"])])],
        );
        let canopy = search(
            0,
            vec![entry(
                "uid=a,dc=x",
                &[
                    ("userPassword", &[hash]),
                    ("authPassword", &["SCRAM-SHA-256$x"]),
                ],
            )],
        );
        assert_eq!(kinds(&slapd, &canopy), vec![]);
        let wrong = search(
            0,
            vec![entry("uid=a,dc=x", &[("userPassword", &["bob-pw"])])],
        );
        assert_eq!(kinds(&wrong, &canopy), vec![Kind::Values]);
        // A hash slapd stores as given must come back as given.
        let given = search(
            0,
            vec![entry("uid=a,dc=x", &[("userPassword", &["{SSHA}other"])])],
        );
        assert_eq!(kinds(&given, &canopy), vec![Kind::Values]);
    }

    #[test]
    fn differences_are_detected() {
        let base = search(0, vec![entry("cn=a,dc=x", &[("cn", &["a", "b"])])]);
        let cases: Vec<(Outcome, Vec<Kind>)> = vec![
            (
                search(32, vec![entry("cn=a,dc=x", &[("cn", &["a", "b"])])]),
                vec![Kind::ResultCode],
            ),
            (search(0, vec![]), vec![Kind::MissingEntry]),
            (
                search(
                    0,
                    vec![
                        entry("cn=a,dc=x", &[("cn", &["a", "b"])]),
                        entry("cn=c,dc=x", &[]),
                    ],
                ),
                vec![Kind::ExtraEntry],
            ),
            (
                search(0, vec![entry("cn=a,dc=x", &[("cn", &["a"])])]),
                vec![Kind::Values],
            ),
            // A multiset: a duplicated value is a difference.
            (
                search(0, vec![entry("cn=a,dc=x", &[("cn", &["a", "b", "b"])])]),
                vec![Kind::Values],
            ),
            (
                search(
                    0,
                    vec![entry("cn=a,dc=x", &[("cn", &["a", "b"]), ("sn", &["x"])])],
                ),
                vec![Kind::Attribute],
            ),
            (
                search(0, vec![entry("CN=A, dc=x", &[("cn", &["a", "b"])])]),
                vec![Kind::DnForm],
            ),
            (Outcome::Failed("closed".into()), vec![Kind::Transport]),
            (
                Outcome::Done(Status {
                    code: 0,
                    ..Status::default()
                }),
                vec![Kind::ResultCode],
            ),
        ];
        for (candidate, want) in cases {
            assert_eq!(kinds(&base, &candidate), want, "{candidate:?}");
        }
    }

    #[test]
    fn read_control_entries_are_compared() {
        let entry = |cn: &str| {
            let mut msg = Vec::new();
            canopy_proto::LdapMessage {
                message_id: 1,
                op: canopy_proto::ProtocolOp::SearchResultEntry(entry(
                    "cn=a,dc=x",
                    &[("cn", &[cn])],
                )),
                controls: vec![],
            }
            .encode(&mut msg);
            // Strip the LDAPMessage header and message id: the control carries the op alone.
            let start = msg.iter().position(|&b| b == 0x64).unwrap();
            canopy_proto::Control {
                oid: POST_READ.into(),
                critical: false,
                value: Some(msg[start..].to_vec()),
            }
        };
        let done = |c: Vec<canopy_proto::Control>| {
            Outcome::Done(Status {
                controls: c,
                ..Status::default()
            })
        };
        assert_eq!(
            kinds(&done(vec![entry("a")]), &done(vec![entry("a")])),
            vec![]
        );
        assert_eq!(
            kinds(&done(vec![entry("a")]), &done(vec![entry("b")])),
            vec![Kind::ResponseControl, Kind::Values]
        );
        assert_eq!(
            kinds(&done(vec![entry("a")]), &done(vec![])),
            vec![Kind::ResponseControl]
        );
    }

    #[test]
    fn dn_values_spelled_differently_are_a_dn_form_difference() {
        let a = search(
            0,
            vec![entry("cn=a,dc=x", &[("entryDN", &["cn=a+sn=b,dc=x"])])],
        );
        let b = search(
            0,
            vec![entry("cn=a,dc=x", &[("entryDN", &["sn=b+cn=a,dc=x"])])],
        );
        assert_eq!(kinds(&a, &b), vec![Kind::DnForm]);
        let c = search(
            0,
            vec![entry("cn=a,dc=x", &[("entryDN", &["sn=c+cn=a,dc=x"])])],
        );
        assert_eq!(kinds(&a, &c), vec![Kind::Values]);
    }

    #[test]
    fn size_limit_compares_only_the_count() {
        let a = search(4, vec![entry("cn=a,dc=x", &[])]);
        let b = search(4, vec![entry("cn=b,dc=x", &[])]);
        assert_eq!(kinds(&a, &b), vec![]);
        let c = search(4, vec![entry("cn=b,dc=x", &[]), entry("cn=c,dc=x", &[])]);
        assert_eq!(kinds(&a, &c), vec![Kind::EntryCount]);
    }

    #[test]
    fn repetitions_are_not_merged_away() {
        let once = search(0, vec![entry("cn=a,dc=x", &[("cn", &["a", "b"])])]);
        let twice = search(
            0,
            vec![
                entry("cn=a,dc=x", &[("cn", &["a", "b"])]),
                entry("cn=a,dc=x", &[("cn", &["a", "b"])]),
            ],
        );
        assert_eq!(kinds(&once, &twice), vec![Kind::ExtraEntry]);
        let split = search(
            0,
            vec![entry("cn=a,dc=x", &[("cn", &["a"]), ("CN", &["b"])])],
        );
        assert_eq!(kinds(&once, &split), vec![Kind::Attribute]);
    }

    #[test]
    fn matched_dn_is_normalized() {
        let done = |dn: &str| {
            Outcome::Done(Status {
                code: 32,
                matched_dn: dn.as_bytes().to_vec(),
                ..Status::default()
            })
        };
        assert_eq!(
            kinds(
                &done("ou=People,dc=example,dc=com"),
                &done("ou=people, DC=example,dc=com")
            ),
            vec![]
        );
        assert_eq!(
            kinds(
                &done("ou=people,dc=example,dc=com"),
                &done("dc=example,dc=com")
            ),
            vec![Kind::MatchedDn]
        );
    }

    #[test]
    fn dn_normalization() {
        for (input, want) in [
            ("CN=Foo  Bar,DC=x", "cn=foo bar,dc=x"),
            ("cn=a+sn=b,dc=x", "cn=a+sn=b,dc=x"),
            ("sn=b+cn=a,dc=x", "cn=a+sn=b,dc=x"),
            ("cn=a\\,b,dc=x", "cn=a\\,b,dc=x"),
            ("cn=a\\2cb,dc=x", "cn=a\\,b,dc=x"),
            ("", ""),
        ] {
            assert_eq!(normalize_dn(input.as_bytes()), want, "{input}");
        }
    }
}
