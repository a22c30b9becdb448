//! LDAP Content Synchronization (RFC 4533, syncrepl): the control and intermediate-response values, and
//! OpenLDAP's text forms of CSNs and sync cookies, shared by Canopy's provider and consumer.

use std::cmp::Ordering;
use std::fmt;

use canopy_ber::{tag, Reader, Writer};

use crate::decoding::DecodeError;

/// RFC 4533 §2.2 Sync Request control.
pub const CONTROL_SYNC_REQUEST: &str = "1.3.6.1.4.1.4203.1.9.1.1";
/// RFC 4533 §2.3 Sync State control (on SearchResultEntry and SearchResultReference).
pub const CONTROL_SYNC_STATE: &str = "1.3.6.1.4.1.4203.1.9.1.2";
/// RFC 4533 §2.4 Sync Done control (on SearchResultDone).
pub const CONTROL_SYNC_DONE: &str = "1.3.6.1.4.1.4203.1.9.1.3";
/// RFC 4533 §2.5 Sync Info message: the responseName of the intermediate response.
pub const SYNC_INFO: &str = "1.3.6.1.4.1.4203.1.9.1.4";
/// RFC 4533 §2.6 e-syncRefreshRequired: the provider cannot bring the consumer's content up to date
/// from its cookie; the consumer must start over without one.
pub const RESULT_SYNC_REFRESH_REQUIRED: u32 = 4096;

/// Largest replica ID of a cookie (slapd's `SLAP_SYNC_RID_MAX`).
pub const RID_MAX: u16 = 999;
/// Largest server ID (slapd's `SLAP_SYNC_SID_MAX`).
pub const SID_MAX: u16 = 0xfff;

const NEW_COOKIE: u8 = 0x80;
const REFRESH_DELETE: u8 = 0xa1;
const REFRESH_PRESENT: u8 = 0xa2;
const SYNC_ID_SET: u8 = 0xa3;

/// The mode of a Sync Request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    RefreshOnly,
    RefreshAndPersist,
}

/// RFC 4533 §2.2 syncRequestValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRequest {
    pub mode: SyncMode,
    /// The consumer's cookie, as sent (parse it with [`Cookie::parse`]).
    pub cookie: Option<Vec<u8>>,
    pub reload_hint: bool,
}

impl SyncRequest {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let mode = match seq.read_integer(tag::ENUMERATED)? {
            1 => SyncMode::RefreshOnly,
            3 => SyncMode::RefreshAndPersist,
            other => {
                return Err(DecodeError::new(format!(
                    "sync request mode {other} unknown"
                )))
            }
        };
        let cookie = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        let reload_hint = match seq.peek_tag() {
            Some(tag::BOOLEAN) => seq.read_bool(tag::BOOLEAN)?,
            _ => false,
        };
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in sync request control"));
        }
        Ok(SyncRequest {
            mode,
            cookie,
            reload_hint,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            let mode = match self.mode {
                SyncMode::RefreshOnly => 1,
                SyncMode::RefreshAndPersist => 3,
            };
            w.integer(tag::ENUMERATED, mode);
            if let Some(cookie) = &self.cookie {
                w.octet_string(tag::OCTET_STRING, cookie);
            }
            if self.reload_hint {
                w.boolean(tag::BOOLEAN, true);
            }
        });
        out
    }
}

/// The state a Sync State control gives an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncStateKind {
    Present = 0,
    Add = 1,
    Modify = 2,
    Delete = 3,
}

/// RFC 4533 §2.3 syncStateValue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    pub state: SyncStateKind,
    /// The entry's entryUUID, as its 16 raw bytes.
    pub uuid: [u8; 16],
    pub cookie: Option<Vec<u8>>,
}

impl SyncState {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let state = match seq.read_integer(tag::ENUMERATED)? {
            0 => SyncStateKind::Present,
            1 => SyncStateKind::Add,
            2 => SyncStateKind::Modify,
            3 => SyncStateKind::Delete,
            other => return Err(DecodeError::new(format!("sync state {other} unknown"))),
        };
        let uuid = read_uuid(&mut seq)?;
        let cookie = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in sync state control"));
        }
        Ok(SyncState {
            state,
            uuid,
            cookie,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.cookie.as_ref().map_or(0, Vec::len));
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::ENUMERATED, self.state as i64);
            w.octet_string(tag::OCTET_STRING, &self.uuid);
            if let Some(cookie) = &self.cookie {
                w.octet_string(tag::OCTET_STRING, cookie);
            }
        });
        out
    }
}

/// RFC 4533 §2.4 syncDoneValue.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncDone {
    pub cookie: Option<Vec<u8>>,
    pub refresh_deletes: bool,
}

impl SyncDone {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let mut seq = outer.read_constructed(tag::SEQUENCE)?;
        let cookie = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
        let refresh_deletes = match seq.peek_tag() {
            Some(tag::BOOLEAN) => seq.read_bool(tag::BOOLEAN)?,
            _ => false,
        };
        if !seq.is_empty() || !outer.is_empty() {
            return Err(DecodeError::new("unexpected data in sync done control"));
        }
        Ok(SyncDone {
            cookie,
            refresh_deletes,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        Writer::new(&mut out).constructed(tag::SEQUENCE, |w| {
            if let Some(cookie) = &self.cookie {
                w.octet_string(tag::OCTET_STRING, cookie);
            }
            if self.refresh_deletes {
                w.boolean(tag::BOOLEAN, true);
            }
        });
        out
    }
}

/// RFC 4533 §2.5 syncInfoValue, the value of a Sync Info intermediate response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncInfo {
    NewCookie(Vec<u8>),
    /// The refresh phase ended (or, with `done` false, a part of it) with deletes sent as such: entries
    /// the consumer holds and was not told about are still there.
    RefreshDelete {
        cookie: Option<Vec<u8>>,
        done: bool,
    },
    /// The refresh used the present phase: entries the consumer holds in the scope that were neither
    /// sent nor named present are gone.
    RefreshPresent {
        cookie: Option<Vec<u8>>,
        done: bool,
    },
    /// Many entries' states at once: present ones, or (with `refresh_deletes`) deleted ones.
    SyncIdSet {
        cookie: Option<Vec<u8>>,
        refresh_deletes: bool,
        uuids: Vec<[u8; 16]>,
    },
}

impl SyncInfo {
    pub fn decode(v: &[u8]) -> Result<Self, DecodeError> {
        let mut outer = Reader::new(v);
        let (tag_byte, contents) = outer.read_tlv()?;
        if !outer.is_empty() {
            return Err(DecodeError::new("unexpected data after sync info value"));
        }
        let mut seq = Reader::new(contents);
        let info = match tag_byte {
            NEW_COOKIE => return Ok(SyncInfo::NewCookie(contents.to_vec())),
            REFRESH_DELETE | REFRESH_PRESENT => {
                let cookie = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
                let done = match seq.peek_tag() {
                    Some(tag::BOOLEAN) => seq.read_bool(tag::BOOLEAN)?,
                    _ => true,
                };
                if tag_byte == REFRESH_DELETE {
                    SyncInfo::RefreshDelete { cookie, done }
                } else {
                    SyncInfo::RefreshPresent { cookie, done }
                }
            }
            SYNC_ID_SET => {
                let cookie = seq.read_optional(tag::OCTET_STRING)?.map(<[u8]>::to_vec);
                let refresh_deletes = match seq.peek_tag() {
                    Some(tag::BOOLEAN) => seq.read_bool(tag::BOOLEAN)?,
                    _ => false,
                };
                let mut set = seq.read_constructed(tag::SET)?;
                let mut uuids = Vec::new();
                while !set.is_empty() {
                    uuids.push(read_uuid(&mut set)?);
                }
                SyncInfo::SyncIdSet {
                    cookie,
                    refresh_deletes,
                    uuids,
                }
            }
            other => {
                return Err(DecodeError::new(format!(
                    "sync info choice {other:#04x} unknown"
                )))
            }
        };
        if !seq.is_empty() {
            return Err(DecodeError::new("unexpected data in sync info value"));
        }
        Ok(info)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        match self {
            SyncInfo::NewCookie(cookie) => w.octet_string(NEW_COOKIE, cookie),
            SyncInfo::RefreshDelete { cookie, done }
            | SyncInfo::RefreshPresent { cookie, done } => {
                let choice = if matches!(self, SyncInfo::RefreshDelete { .. }) {
                    REFRESH_DELETE
                } else {
                    REFRESH_PRESENT
                };
                w.constructed(choice, |w| {
                    if let Some(cookie) = cookie {
                        w.octet_string(tag::OCTET_STRING, cookie);
                    }
                    // DEFAULT TRUE: only FALSE is written.
                    if !done {
                        w.boolean(tag::BOOLEAN, false);
                    }
                });
            }
            SyncInfo::SyncIdSet {
                cookie,
                refresh_deletes,
                uuids,
            } => w.constructed(SYNC_ID_SET, |w| {
                if let Some(cookie) = cookie {
                    w.octet_string(tag::OCTET_STRING, cookie);
                }
                if *refresh_deletes {
                    w.boolean(tag::BOOLEAN, true);
                }
                w.constructed(tag::SET, |w| {
                    for uuid in uuids {
                        w.octet_string(tag::OCTET_STRING, uuid);
                    }
                });
            }),
        }
        out
    }
}

fn read_uuid(r: &mut Reader<'_>) -> Result<[u8; 16], DecodeError> {
    let bytes = r.read_octet_string(tag::OCTET_STRING)?;
    <[u8; 16]>::try_from(bytes)
        .map_err(|_| DecodeError::new(format!("syncUUID of {} bytes, not 16", bytes.len())))
}

/// A UUID in its text form (`8-4-4-4-12` hex digits, as entryUUID holds it) to its 16 bytes.
pub fn uuid_from_text(text: &str) -> Option<[u8; 16]> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let hex = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 16];
    // Dashes at 8, 13, 18 and 23 and nowhere else; two hex digits per byte in between.
    let (mut at, mut filled) = (0, 0);
    while at < bytes.len() {
        if matches!(at, 8 | 13 | 18 | 23) {
            if bytes.get(at) != Some(&b'-') {
                return None;
            }
            at += 1;
            continue;
        }
        let high = hex(*bytes.get(at)?)?;
        let low = hex(*bytes.get(at + 1)?)?;
        *out.get_mut(filled)? = high << 4 | low;
        filled += 1;
        at += 2;
    }
    Some(out)
}

/// 16 bytes to a UUID's lower-case text form, as slapd writes entryUUID.
pub fn uuid_to_text(uuid: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in uuid.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A change sequence number in OpenLDAP 2.5's form, `YYYYmmddHHMMSS.uuuuuuZ#cccccc#sid#mmmmmm`: the time
/// to the microsecond, a change counter, the server ID and a modification number, all fixed width, so
/// CSNs order as their text does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Csn(String);

impl Csn {
    /// Parses a CSN, strictly in 2.5's form (40 characters).
    pub fn parse(text: &str) -> Option<Csn> {
        let b = text.as_bytes();
        if b.len() != 40 {
            return None;
        }
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let hex = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_hexdigit);
        let ok = digits(0..14)
            && b[14] == b'.'
            && digits(15..21)
            && b[21] == b'Z'
            && b[22] == b'#'
            && hex(23..29)
            && b[29] == b'#'
            && hex(30..33)
            && b[33] == b'#'
            && hex(34..40);
        // Hex digits are compared in lower case; the rest is fixed.
        ok.then(|| {
            let mut csn = String::with_capacity(40);
            csn.push_str(&text[..23]);
            csn.extend(text[23..].chars().map(|c| c.to_ascii_lowercase()));
            Csn(csn)
        })
    }

    /// The CSN of `micros` since the epoch with `counter` and server ID `sid`.
    pub fn new(time: &str, micros: u32, counter: u32, sid: u16) -> Csn {
        Csn(format!(
            "{time}.{micros:06}Z#{:06x}#{:03x}#000000",
            counter & 0xff_ffff,
            sid & SID_MAX
        ))
    }

    /// The server ID that made this change.
    pub fn sid(&self) -> u16 {
        u16::from_str_radix(&self.0[30..33], 16).unwrap_or(0)
    }

    /// The time part, `YYYYmmddHHMMSS`.
    pub fn seconds(&self) -> &str {
        &self.0[..14]
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Ord for Csn {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

impl PartialOrd for Csn {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Csn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The set of CSNs a replica has seen: at most one per server ID, the highest (slapd's contextCSN values,
/// and a cookie's `csn=` list).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsnSet(Vec<Csn>);

impl CsnSet {
    pub fn new() -> CsnSet {
        CsnSet::default()
    }

    /// Adds `csn`, keeping only the highest per server ID; true when it raised the set.
    pub fn observe(&mut self, csn: &Csn) -> bool {
        match self.0.iter_mut().find(|c| c.sid() == csn.sid()) {
            Some(have) if *have >= *csn => false,
            Some(have) => {
                *have = csn.clone();
                true
            }
            None => {
                self.0.push(csn.clone());
                self.0.sort_by_key(Csn::sid);
                true
            }
        }
    }

    /// The highest CSN of server `sid`.
    pub fn get(&self, sid: u16) -> Option<&Csn> {
        self.0.iter().find(|c| c.sid() == sid)
    }

    /// True when `csn` is newer than what this set holds for its server: a change not seen yet.
    pub fn is_new(&self, csn: &Csn) -> bool {
        self.get(csn.sid()).is_none_or(|have| csn > have)
    }

    /// [`CsnSet::is_new`] for a cookie that holds CSNs of other server IDs but none of ID 0: a CSN of
    /// server ID 0 is then not new. ID 0 writes in no multi-provider group (every writer there has
    /// its own non-zero ID, slapd's as Canopy's), so such a CSN comes from before the cookie's
    /// history began (an offline import, a former single provider): the cookie's holder received
    /// that entry in its first refresh, and a slapd peer's cookie never names ID 0 for it.
    /// Found by the replication harness (a slapd peer re-added entries it had deleted).
    pub fn is_new_to(&self, csn: &Csn) -> bool {
        if csn.sid() == 0 && self.get(0).is_none() && !self.is_empty() {
            return false;
        }
        self.is_new(csn)
    }

    /// True when this set has seen everything `other` has.
    pub fn covers(&self, other: &CsnSet) -> bool {
        other.0.iter().all(|c| !self.is_new(c))
    }

    /// The CSNs, ordered by server ID.
    pub fn csns(&self) -> &[Csn] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<Csn> for CsnSet {
    fn from_iter<I: IntoIterator<Item = Csn>>(iter: I) -> Self {
        let mut set = CsnSet::new();
        for csn in iter {
            set.observe(&csn);
        }
        set
    }
}

/// A sync cookie in OpenLDAP's text form: `rid=NNN[,sid=XXX][,csn=CSN[;CSN...]]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cookie {
    /// The consumer's replica ID (`rid`, decimal, 0–999).
    pub rid: Option<u16>,
    /// The server ID of whoever made the cookie (`sid`, hex, 0–0xfff).
    pub sid: Option<u16>,
    pub csns: CsnSet,
}

/// Why a cookie does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieError(pub String);

impl fmt::Display for CookieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Cookie {
    /// Parses a cookie as slapd's `slap_parse_sync_cookie` reads one: comma-separated `rid=`, `sid=` and
    /// `csn=` fields in any order, CSNs separated by `;`, unknown fields (such as 2.5's `delcsn=`)
    /// ignored. Unlike slapd, a CSN that is not in 2.5's form is an error, not silently dropped.
    pub fn parse(bytes: &[u8]) -> Result<Cookie, CookieError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|_| CookieError("the cookie is not UTF-8".to_string()))?;
        let mut cookie = Cookie::default();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(csns) = rest.strip_prefix("csn=") {
                // The CSN list runs to the next field, which starts after a ',' (CSNs contain none).
                let (list, tail) = csns.split_once(',').unwrap_or((csns, ""));
                for csn in list.split(';') {
                    let parsed = Csn::parse(csn)
                        .ok_or_else(|| CookieError(format!("\"{csn}\" is not a CSN")))?;
                    cookie.csns.observe(&parsed);
                }
                rest = tail;
                continue;
            }
            let (field, tail) = rest.split_once(',').unwrap_or((rest, ""));
            if let Some(rid) = field.strip_prefix("rid=") {
                cookie.rid = Some(
                    rid.parse::<u16>()
                        .ok()
                        .filter(|r| *r <= RID_MAX)
                        .ok_or_else(|| CookieError(format!("rid \"{rid}\" is not 0 to 999")))?,
                );
            } else if let Some(sid) = field.strip_prefix("sid=") {
                cookie.sid = Some(
                    u16::from_str_radix(sid, 16)
                        .ok()
                        .filter(|s| *s <= SID_MAX)
                        .ok_or_else(|| CookieError(format!("sid \"{sid}\" is not 0 to fff")))?,
                );
            }
            rest = tail;
        }
        Ok(cookie)
    }

    /// The cookie's text as slapd composes it: `rid=%03d`, `sid=%03x`, `csn=` list.
    pub fn to_text(&self) -> String {
        let mut fields = Vec::new();
        if let Some(rid) = self.rid {
            fields.push(format!("rid={rid:03}"));
        }
        if let Some(sid) = self.sid {
            fields.push(format!("sid={sid:03x}"));
        }
        if !self.csns.is_empty() {
            let list: Vec<&str> = self.csns.csns().iter().map(Csn::as_str).collect();
            fields.push(format!("csn={}", list.join(";")));
        }
        fields.join(",")
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.to_text().into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{hex, unhex};

    const A: &str = "20261125053916.123456Z#000000#000#000000";
    const B: &str = "20261125053917.000001Z#000002#001#000000";

    #[test]
    fn sync_request_vectors() {
        let cases: &[(SyncMode, Option<&[u8]>, bool, &str)] = &[
            (SyncMode::RefreshOnly, None, false, "30 03 0a 01 01"),
            (
                SyncMode::RefreshAndPersist,
                Some(b"rid=1"),
                false,
                "30 0a 0a 01 03 04 05 72 69 64 3d 31",
            ),
            (SyncMode::RefreshOnly, None, true, "30 06 0a 01 01 01 01 ff"),
        ];
        for &(mode, cookie, reload_hint, expected) in cases {
            let value = SyncRequest {
                mode,
                cookie: cookie.map(<[u8]>::to_vec),
                reload_hint,
            };
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(SyncRequest::decode(&unhex(expected)).unwrap(), value);
        }
        for bad in [
            "",
            "30 03 0a 01 02",
            "30 03 02 01 01",
            "30 05 0a 01 01 05 00",
            "04 00",
        ] {
            assert!(SyncRequest::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn sync_state_round_trip_and_rejects() {
        let value = SyncState {
            state: SyncStateKind::Delete,
            uuid: [7; 16],
            cookie: Some(b"rid=001,csn=x".to_vec()),
        };
        assert_eq!(SyncState::decode(&value.encode()).unwrap(), value);
        assert!(SyncState::decode(&unhex("30 06 0a 01 01 04 01 00")).is_err());
        assert!(SyncState::decode(&unhex(
            "30 15 0a 01 07 04 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
        ))
        .is_err());
    }

    #[test]
    fn sync_done_vectors() {
        assert_eq!(hex(&SyncDone::default().encode()), "30 00");
        let value = SyncDone {
            cookie: Some(b"c".to_vec()),
            refresh_deletes: true,
        };
        assert_eq!(hex(&value.encode()), "30 06 04 01 63 01 01 ff");
        assert_eq!(
            SyncDone::decode(&unhex("30 06 04 01 63 01 01 ff")).unwrap(),
            value
        );
        assert!(SyncDone::decode(&unhex("30 02 02 00")).is_err());
    }

    #[test]
    fn sync_info_vectors() {
        let cases = [
            (SyncInfo::NewCookie(b"ab".to_vec()), "80 02 61 62"),
            (
                SyncInfo::RefreshDelete {
                    cookie: None,
                    done: true,
                },
                "a1 00",
            ),
            (
                SyncInfo::RefreshPresent {
                    cookie: Some(b"c".to_vec()),
                    done: false,
                },
                "a2 06 04 01 63 01 01 00",
            ),
            (
                SyncInfo::SyncIdSet {
                    cookie: None,
                    refresh_deletes: true,
                    uuids: vec![[0; 16]],
                },
                "a3 17 01 01 ff 31 12 04 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(hex(&value.encode()), expected);
            assert_eq!(SyncInfo::decode(&unhex(expected)).unwrap(), value);
        }
        for bad in [
            "",
            "a4 00",
            "a1 00 00",
            "a3 05 31 03 04 01 00",
            "a1 02 02 00",
        ] {
            assert!(SyncInfo::decode(&unhex(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn uuid_text() {
        let text = "0b3b2f0e-9d3c-103f-8b2a-0b1fc4b5c1d2";
        let bytes = uuid_from_text(text).unwrap();
        assert_eq!(uuid_to_text(&bytes), text);
        assert_eq!(uuid_from_text(&text.to_uppercase()), Some(bytes));
        for bad in [
            "",
            "0b3b2f0e9d3c103f8b2a0b1fc4b5c1d2",
            "0b3b2f0e-9d3c-103f-8b2a-0b1fc4b5c1dz",
            "0b3b2f0e9-d3c-103f-8b2a-0b1fc4b5c1d2",
            "+b3b2f0e-9d3c-103f-8b2a-0b1fc4b5c1d2",
        ] {
            assert_eq!(uuid_from_text(bad), None, "{bad}");
        }
    }

    #[test]
    fn csn_parse_and_order() {
        let a = Csn::parse(A).unwrap();
        let b = Csn::parse(B).unwrap();
        assert!(a < b);
        assert_eq!((a.sid(), b.sid()), (0, 1));
        assert_eq!(a.seconds(), "20261125053916");
        assert_eq!(Csn::new("20261125053916", 123456, 0, 0), a);
        for bad in [
            "",
            "20261125053916Z#000000#00#000000",
            "20261125053916.123456Z#000000#000#00000",
            "20261125053916.123456Z#00000g#000#000000",
            "2026112505391x.123456Z#000000#000#000000",
        ] {
            assert_eq!(Csn::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn csn_set_keeps_the_highest_per_server() {
        let mut set = CsnSet::new();
        let a = Csn::parse(A).unwrap();
        let b = Csn::parse(B).unwrap();
        let a2 = Csn::new("20261125060000", 0, 0, 0);
        assert!(set.observe(&b));
        assert!(set.observe(&a));
        assert!(!set.observe(&a));
        assert!(set.observe(&a2));
        assert_eq!(set.csns(), &[a2.clone(), b.clone()]);
        assert!(!set.is_new(&a));
        assert!(set.is_new(&Csn::new("20261125053916", 0, 0, 5)));
        let older: CsnSet = [a, b].into_iter().collect();
        assert!(set.covers(&older));
        assert!(!older.covers(&set));
    }

    #[test]
    fn cookies_as_slapd_writes_them() {
        let text = format!("rid=001,sid=002,csn={A};{B}");
        let cookie = Cookie::parse(text.as_bytes()).unwrap();
        assert_eq!(cookie.rid, Some(1));
        assert_eq!(cookie.sid, Some(2));
        assert_eq!(cookie.csns.csns().len(), 2);
        assert_eq!(cookie.to_text(), text);
        // Order of fields, unknown fields and a CSN list before other fields.
        let cookie = Cookie::parse(format!("csn={B},rid=12,delcsn={A}").as_bytes()).unwrap();
        assert_eq!(cookie.rid, Some(12));
        assert_eq!(cookie.to_text(), format!("rid=012,csn={B}"));
        assert_eq!(Cookie::parse(b"rid=000").unwrap().to_text(), "rid=000");
        for bad in [
            &b"rid=1000"[..],
            b"rid=x",
            b"sid=1000",
            b"csn=nope",
            b"\xff",
        ] {
            assert!(Cookie::parse(bad).is_err(), "{bad:?}");
        }
    }
}
