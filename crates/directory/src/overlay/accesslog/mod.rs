//! accesslog: every successful write of a database recorded as an entry of a separate log database
//! (`cn=accesslog`), in the form of slapd's accesslog overlay, so that delta-syncrepl consumers can follow
//! the log (docs/design/replication.md, "delta-syncrepl: the access log").
//!
//! The hook builds the record in the write's commit step and stores it in the data store's meta table
//! (the outbox, `accesslog/<reqStart>`) inside the same transaction; `writer` moves it to the log
//! database once the write is durable and recovers what a crash left in the outbox.

mod schema;
pub mod writer;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use canopy_core::{Attribute, Entry, LdapError};
use canopy_mdb::WriteTxn;
use canopy_proto::{Dn, ModifyOperation, ResultCode};
use canopy_schema::{NormDn, Schema};

pub use schema::ACCESSLOG_SCHEMA;
pub use writer::{LogWriter, Record};

use crate::database::Directory;
use crate::error::store_error;
use crate::event::{after_commit, Event, Kind, Origin};
use crate::pipeline::WriteHook;

/// The prefix of outbox keys in the data store's meta table.
pub const OUTBOX_PREFIX: &[u8] = b"accesslog/";

/// Which writes are logged (`logops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ops {
    pub add: bool,
    pub delete: bool,
    pub modify: bool,
    pub modrdn: bool,
}

impl Ops {
    /// slapd's `logops` words: `writes` or its parts `add`, `delete`, `modify`, `modrdn`. Reads, binds
    /// and the session operations are not logged by Canopy and are refused here with the reason.
    pub fn parse<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<Ops, String> {
        let mut ops = Ops::default();
        for word in words {
            match word.to_ascii_lowercase().as_str() {
                "writes" => {
                    ops = Ops {
                        add: true,
                        delete: true,
                        modify: true,
                        modrdn: true,
                    }
                }
                "add" => ops.add = true,
                "delete" => ops.delete = true,
                "modify" => ops.modify = true,
                "modrdn" => ops.modrdn = true,
                other @ ("reads" | "session" | "all" | "bind" | "unbind" | "compare" | "search"
                | "abandon" | "extended") => {
                    return Err(format!(
                        "logops {other:?}: Canopy logs writes only (writes, add, delete, modify, modrdn)"
                    ))
                }
                other => return Err(format!("logops: unknown operation {other:?}")),
            }
        }
        if ops == Ops::default() {
            return Err("logops: no operation named (e.g. \"writes\")".into());
        }
        Ok(ops)
    }

    fn logs(&self, kind: Kind) -> bool {
        match kind {
            Kind::Add => self.add,
            Kind::Delete => self.delete,
            Kind::Modify => self.modify,
            Kind::Rename => self.modrdn,
        }
    }
}

/// The overlay's settings: slapd's `logdb`, `logops`, `logpurge`.
#[derive(Debug, Clone)]
pub struct Config {
    /// The log database's suffix.
    pub logdb: String,
    pub ops: Ops,
    /// `logpurge`: records older than the age are deleted every interval.
    pub purge: Option<(Duration, Duration)>,
    /// The log database's access rules (the frontend compiles them). Records carry every value a
    /// write stored, password hashes included, so the default lets only the root DN read the log.
    pub access: Vec<String>,
}

/// The log database's rules when none are configured: nobody but the root DN.
pub const DEFAULT_ACCESS: &str = "to * by * none";

/// Parses one `logpurge` duration, slapd's `[DD+]HH:MM[:SS]`.
pub fn parse_age(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration of the form [DD+]HH:MM[:SS]");
    let (days, clock) = match text.split_once('+') {
        Some((d, rest)) => (d.parse::<u64>().map_err(|_| bad())?, rest),
        None => (0, text),
    };
    let parts: Vec<u64> = clock
        .split(':')
        .map(|p| p.parse::<u64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let (h, m, s) = match parts.as_slice() {
        [h, m] => (*h, *m, 0),
        [h, m, s] => (*h, *m, *s),
        _ => return Err(bad()),
    };
    if h > 23 || m > 59 || s > 59 {
        return Err(bad());
    }
    Ok(Duration::from_secs(((days * 24 + h) * 60 + m) * 60 + s))
}

/// The hook: slapd's `overlay accesslog` on the data database.
pub struct AccessLog {
    config: Config,
    shared: Arc<writer::Shared>,
}

impl AccessLog {
    /// The hook and the writer that carries its records to the log database (started by the server
    /// once the log database is open).
    pub fn new(config: Config) -> (AccessLog, LogWriter) {
        let (shared, writer) = writer::channel();
        (AccessLog { config, shared }, writer)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl WriteHook for AccessLog {
    fn name(&self) -> &'static str {
        "accesslog"
    }

    fn check(&self, _schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        let logdb = Dn::parse(self.config.logdb.as_bytes())
            .map_err(|e| format!("logdb {:?}: {e}", self.config.logdb))?;
        if logdb.rdns.is_empty() {
            return Err("logdb: the log database needs a suffix of its own".into());
        }
        if logdb.to_string().eq_ignore_ascii_case(&suffix.to_string()) {
            return Err("logdb: the log database cannot be the database it logs".into());
        }
        Ok(())
    }

    fn commit(
        &self,
        _dir: &Directory,
        txn: &mut WriteTxn<'_>,
        event: &Event<'_>,
    ) -> Result<(), LdapError> {
        // Records the log database holds durably: their outbox copies go in this transaction.
        let done = self.shared.done();
        for key in &done {
            txn.del_meta(key).map_err(store_error)?;
        }
        if !done.is_empty() {
            let shared = self.shared.clone();
            after_commit(move || shared.forget(&done));
        }
        if !self.config.ops.logs(event.kind) {
            return Ok(());
        }
        // A replicated change keeps the CSN it was made with (a cascaded delta consumer's cookie
        // must name it); a replicated delete carries none, and the local stamp orders it.
        let csn = match event.origin {
            Origin::Local => event.stamp.csn.clone(),
            Origin::Replica => event
                .new
                .and_then(|e| e.get("entryCSN"))
                .and_then(|a| a.values.first())
                .and_then(|v| String::from_utf8(v.clone()).ok())
                .unwrap_or_else(|| event.stamp.csn.clone()),
        };
        let start = self.shared.next_start(&csn);
        let record = Record {
            start: start.clone(),
            end: self.shared.end_after(&start),
            csn,
            uuid: uuid::Uuid::new_v4().hyphenated().to_string(),
            attrs: record_attrs(event),
        };
        if record.csn.is_empty() {
            return Err(LdapError::new(
                ResultCode::Other,
                "accesslog: the write has no CSN",
            ));
        }
        let key = [OUTBOX_PREFIX, start.as_bytes()].concat();
        txn.put_meta(&key, &record.encode()).map_err(store_error)?;
        let shared = self.shared.clone();
        after_commit(move || shared.send(key, record));
        Ok(())
    }
}

/// The operational attributes of a new entry, in the order slapd's add record lists them.
const ADD_OPERATIONAL: [&str; 7] = [
    "structuralObjectClass",
    "entryUUID",
    "creatorsName",
    "createTimestamp",
    "entryCSN",
    "modifiersName",
    "modifyTimestamp",
];

/// The stamped attributes a modify and a modrdn change, logged after the requested changes.
const STAMPED: [&str; 3] = ["entryCSN", "modifiersName", "modifyTimestamp"];

/// The record's attributes that describe the change (the writer adds reqStart, reqEnd, the object
/// class and the log entry's own operational attributes).
fn record_attrs(event: &Event<'_>) -> Vec<Attribute> {
    let mut attrs = Vec::new();
    let mut push = |name: &str, value: Vec<u8>| match attrs
        .iter_mut()
        .find(|a: &&mut Attribute| a.desc == name)
    {
        Some(attr) => attr.values.push(value),
        None => attrs.push(Attribute {
            desc: name.to_string(),
            values: vec![value],
        }),
    };
    let kind = match event.kind {
        Kind::Add => "add",
        Kind::Delete => "delete",
        Kind::Modify => "modify",
        Kind::Rename => "modrdn",
    };
    push("reqType", kind.as_bytes().to_vec());
    push("reqSession", b"0".to_vec());
    if !event.requester.is_empty() {
        push("reqAuthzID", event.requester.as_bytes().to_vec());
    }
    let target = event.old.or(event.new);
    if let Some(entry) = target {
        push("reqDN", entry.dn.to_string().into_bytes());
    }
    push("reqResult", b"0".to_vec());
    let mut reqmod = |name: &str, op: char, value: Option<&[u8]>| {
        let mut text = format!("{name}:{op}").into_bytes();
        if let Some(value) = value {
            text.push(b' ');
            text.extend_from_slice(value);
        }
        push("reqMod", text);
    };
    match event.kind {
        Kind::Add => {
            // The client's attributes first, then the server's in slapd's order.
            // Canopy's per-attribute CSNs are its own business: a slapd delta consumer would
            // refuse the unknown attribute.
            let attrs: Vec<&Attribute> = event
                .new
                .iter()
                .flat_map(|e| &e.attrs)
                .filter(|a| !a.desc.eq_ignore_ascii_case(crate::attrcsn::ATTR_CSN))
                .collect();
            let rank = |a: &Attribute| {
                ADD_OPERATIONAL
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(&a.desc))
            };
            let user = attrs.iter().filter(|a| rank(a).is_none());
            let mut operational: Vec<&&Attribute> =
                attrs.iter().filter(|a| rank(a).is_some()).collect();
            operational.sort_by_key(|a| rank(a));
            for attr in user.chain(operational) {
                for value in &attr.values {
                    reqmod(&attr.desc, '+', Some(value));
                }
            }
        }
        Kind::Delete => {}
        Kind::Modify | Kind::Rename => {
            for change in event.changes {
                let op = match change.operation {
                    ModifyOperation::Add => '+',
                    ModifyOperation::Delete => '-',
                    ModifyOperation::Replace => '=',
                    ModifyOperation::Increment => '#',
                };
                let name = &change.modification.name;
                if change.modification.values.is_empty() {
                    reqmod(name, op, None);
                }
                for value in &change.modification.values {
                    reqmod(name, op, Some(value));
                }
            }
            for name in STAMPED {
                if let Some(attr) = event.new.and_then(|e| e.get(name)) {
                    for value in &attr.values {
                        reqmod(name, '=', Some(value));
                    }
                }
            }
        }
    }
    if let (Kind::Rename, Some(old), Some(new)) = (event.kind, event.old, event.new) {
        let first = |dn: &Dn| Dn {
            rdns: dn.rdns.first().cloned().into_iter().collect(),
        };
        push("reqNewRDN", first(&new.dn).to_string().into_bytes());
        // The old RDN's values are gone from the entry exactly when the client asked to delete them.
        let kept = old.dn.rdns.first().is_none_or(|rdn| {
            rdn.avas.iter().all(|ava| {
                new.get(&ava.attr)
                    .is_some_and(|a| a.values.iter().any(|v| v.eq_ignore_ascii_case(&ava.value)))
            })
        });
        let deleted: &[u8] = if kept { b"FALSE" } else { b"TRUE" };
        push("reqDeleteOldRDN", deleted.to_vec());
        if old.ndn.parent() != new.ndn.parent() {
            push("reqNewSuperior", new.dn.parent().to_string().into_bytes());
        }
        push("reqNewDN", new.dn.to_string().into_bytes());
    }
    if let Some(uuid) = target
        .and_then(|e| e.get("entryUUID"))
        .and_then(|a| a.values.first())
    {
        push("reqEntryUUID", uuid.clone());
    }
    attrs
}

/// The record's object class by its reqType.
fn class_of(kind: &[u8]) -> &'static str {
    match kind {
        b"add" => "auditAdd",
        b"delete" => "auditDelete",
        b"modrdn" => "auditModRDN",
        _ => "auditModify",
    }
}

/// Used by the writer: the log entry of a record under `suffix`.
pub(crate) fn log_entry(
    schema: &Schema,
    suffix: &Dn,
    record: &Record,
    uuid: &str,
) -> Result<Entry, LdapError> {
    let dn_text = format!("reqStart={},{}", record.start, suffix);
    let dn = Dn::parse(dn_text.as_bytes())
        .map_err(|e| LdapError::new(ResultCode::Other, format!("accesslog: {dn_text}: {e}")))?;
    let ndn = schema
        .normalize_dn(&dn)
        .map_err(|e| LdapError::new(ResultCode::Other, format!("accesslog: {dn_text}: {e}")))?;
    let kind = record
        .attrs
        .iter()
        .find(|a| a.desc == "reqType")
        .and_then(|a| a.values.first())
        .map_or(&b"modify"[..], Vec::as_slice);
    let class = class_of(kind);
    let one = |desc: &str, value: &[u8]| Attribute {
        desc: desc.to_string(),
        values: vec![value.to_vec()],
    };
    let time = record.start.get(..14).unwrap_or("19700101000000");
    let creator = suffix.to_string();
    let mut attrs = vec![
        one("objectClass", class.as_bytes()),
        one("reqStart", record.start.as_bytes()),
        one("reqEnd", record.end.as_bytes()),
    ];
    attrs.extend(record.attrs.iter().cloned());
    attrs.extend([
        one("structuralObjectClass", class.as_bytes()),
        one("entryUUID", uuid.as_bytes()),
        one("creatorsName", creator.as_bytes()),
        one("createTimestamp", format!("{time}Z").as_bytes()),
        one("entryCSN", record.csn.as_bytes()),
        one("modifiersName", creator.as_bytes()),
        one("modifyTimestamp", format!("{time}Z").as_bytes()),
    ]);
    Ok(Entry { dn, ndn, attrs })
}

/// Keeps reqStart strictly ascending: the last one handed out.
#[derive(Default)]
pub(crate) struct StartClock(Mutex<u128>);

impl StartClock {
    /// The reqStart of a write whose CSN is `csn`: its microsecond time, or one microsecond after the
    /// last reqStart when that is not later.
    pub(crate) fn next(&self, csn: &str) -> String {
        let micros = csn_micros(csn).unwrap_or(0);
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let start = micros.max(*last + 1);
        *last = start;
        format_micros(start)
    }
}

/// Microseconds since the epoch of a CSN's (or a reqStart's) time, `YYYYMMDDHHMMSS.uuuuuuZ...`.
pub(crate) fn csn_micros(text: &str) -> Option<u128> {
    let digits = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (digits(0..4)?, digits(4..6)?, digits(6..8)?);
    let (h, mi, s) = (digits(8..10)?, digits(10..12)?, digits(12..14)?);
    let frac = digits(15..21)?;
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s;
    u128::try_from(secs)
        .ok()
        .map(|s| s * 1_000_000 + frac as u128)
}

/// `YYYYMMDDHHMMSS.uuuuuuZ` of microseconds since the epoch.
pub(crate) fn format_micros(micros: u128) -> String {
    let secs = i64::try_from(micros / 1_000_000).unwrap_or(0);
    let frac = (micros % 1_000_000) as u32;
    let (y, mo, d, h, mi, s) = crate::opattrs::civil(secs);
    format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}.{frac:06}Z")
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An add record lists the entry's attributes but never Canopy's per-attribute CSNs, which a
    /// slapd delta consumer would refuse as unknown.
    #[test]
    fn add_records_leave_out_the_attribute_csns() {
        let entry = Entry {
            dn: canopy_proto::Dn::parse(b"cn=a,dc=example,dc=com").unwrap(),
            ndn: canopy_schema::NormDn::root(),
            attrs: ["cn", "entryCSN", crate::attrcsn::ATTR_CSN]
                .iter()
                .map(|d| Attribute {
                    desc: d.to_string(),
                    values: vec![b"x".to_vec()],
                })
                .collect(),
        };
        let stamp = crate::opattrs::Stamp::now();
        let event = Event {
            kind: Kind::Add,
            id: 1,
            old: None,
            new: Some(&entry),
            changes: &[],
            stamp: &stamp,
            requester: "",
            origin: Origin::Local,
        };
        let mods: Vec<String> = record_attrs(&event)
            .into_iter()
            .filter(|a| a.desc == "reqMod")
            .flat_map(|a| a.values)
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .collect();
        assert!(mods.iter().any(|m| m.starts_with("cn:+")), "{mods:?}");
        assert!(mods.iter().any(|m| m.starts_with("entryCSN:+")), "{mods:?}");
        assert!(
            !mods.iter().any(|m| m.starts_with("canopyAttrCSN")),
            "{mods:?}"
        );
    }

    #[test]
    fn logops_as_slapd_names_them() {
        assert_eq!(
            Ops::parse(["writes"]).unwrap(),
            Ops::parse(["add", "delete", "modify", "modrdn"]).unwrap()
        );
        assert!(Ops::parse(["reads"]).unwrap_err().contains("writes only"));
        assert!(Ops::parse(["nonsense"]).is_err());
        assert!(Ops::parse([]).is_err());
    }

    #[test]
    fn logpurge_durations() {
        assert_eq!(
            parse_age("07+00:00").unwrap(),
            Duration::from_secs(7 * 86_400)
        );
        assert_eq!(parse_age("01:30").unwrap(), Duration::from_secs(5_400));
        assert_eq!(parse_age("00:00:05").unwrap(), Duration::from_secs(5));
        for bad in ["", "7", "1+25:00", "x+01:00", "01:60"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn req_start_ascends_and_round_trips() {
        let clock = StartClock::default();
        let csn = "20261127033042.122526Z#000000#000#000000";
        assert_eq!(clock.next(csn), "20261127033042.122526Z");
        assert_eq!(clock.next(csn), "20261127033042.122527Z");
        let micros = csn_micros(csn).unwrap();
        assert_eq!(format_micros(micros), "20261127033042.122526Z");
    }

    #[test]
    fn the_schema_loads() {
        let mut schema = Schema::builtin();
        schema.load_text(ACCESSLOG_SCHEMA, "accesslog").unwrap();
        assert!(schema.attribute_type("reqMod").is_some());
        assert!(schema.object_class("auditModRDN").is_some());
    }
}
