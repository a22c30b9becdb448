//! Limits: per-identity search limits (OpenLDAP `limits`), connection counts in total and per IP address, the
//! idle timeout and the thread stack that deep filters need.

use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use canopy_proto::oid::NOTICE_OF_DISCONNECTION;
use canopy_proto::{ExtendedResponse, LdapMessage, LdapResult, ProtocolOp, ResultCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use canopy_core::LdapError;
use canopy_directory::Snapshot;
use canopy_schema::NormDn;

use crate::access::Who;
use canopy_directory::Directory;

/// Server-wide limits. Zero means "no limit" where OpenLDAP's `unlimited` would be used.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Most entries a search returns (OpenLDAP `sizelimit`, default 500).
    pub size_limit: u32,
    /// Most seconds a search runs (OpenLDAP `timelimit`, default 3600).
    pub time_limit: u32,
    /// Largest request PDU from an anonymous client (OpenLDAP `sockbuf_max_incoming`).
    pub max_pdu_anonymous: usize,
    /// Largest request PDU from a bound client (OpenLDAP `sockbuf_max_incoming_auth`).
    pub max_pdu_bound: usize,
    /// Deepest nesting of a search filter.
    pub max_filter_depth: usize,
    /// Most requests one connection may have in progress at once; beyond it the server stops reading from
    /// that connection until one finishes (TCP back-pressure, bounded memory).
    pub max_pending_per_connection: usize,
    /// Most open connections in total (0 = unlimited); more are closed at once with a Notice of Disconnection.
    pub max_connections: usize,
    /// Most open connections from one IP address (0 = unlimited).
    pub max_connections_per_ip: usize,
    /// Seconds a connection without an outstanding operation may stay silent before it is closed (OpenLDAP
    /// `idletimeout`, 0 = never).
    pub idle_timeout: u64,
    /// Most candidates a search may have before any is examined (OpenLDAP `size.unchecked`, 0 = unlimited);
    /// more answer adminLimitExceeded.
    pub lookthrough_limit: u64,
    /// Largest page a paged search may ask for (OpenLDAP `size.pr`, 0 = unlimited).
    pub paged_size_limit: u64,
    /// Most entries one paged search returns over all its pages (OpenLDAP `size.prtotal`); absent: the
    /// size limit applies.
    pub paged_total_limit: Option<LimitValue>,
    /// Per-identity limits (OpenLDAP `limits`): the first rule whose `who` matches wins.
    pub rules: Vec<LimitRule>,
}

/// A limit: a number, `"unlimited"` or (paged_total only) `"disabled"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawLimit")]
pub enum LimitValue {
    Limited(u64),
    Unlimited,
    /// Only for `paged_total`: the paged results control is refused (slapd `size.prtotal=disabled`).
    Disabled,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawLimit {
    Number(u64),
    Word(String),
}

impl TryFrom<RawLimit> for LimitValue {
    type Error = String;
    fn try_from(raw: RawLimit) -> Result<Self, String> {
        match raw {
            RawLimit::Number(n) => Ok(LimitValue::Limited(n)),
            RawLimit::Word(w) if w == "unlimited" => Ok(LimitValue::Unlimited),
            RawLimit::Word(w) if w == "disabled" => Ok(LimitValue::Disabled),
            RawLimit::Word(w) => Err(format!("limit {w:?}: expected a number or \"unlimited\"")),
        }
    }
}

impl LimitValue {
    /// The limit as a count, None when unlimited. `disabled` is refused by the configuration check where
    /// this is used; as a count it admits nothing.
    pub fn count(self) -> Option<u64> {
        match self {
            LimitValue::Limited(n) => Some(n),
            LimitValue::Unlimited => None,
            LimitValue::Disabled => Some(0),
        }
    }
}

/// One `[[limits.rules]]` entry: whom it applies to and the limits it sets; others stay global.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRule {
    /// `anonymous`, `users`, `*`, `dn.exact:DN`, `dn.subtree:DN` or `group:DN` (groupOfNames members).
    pub who: String,
    pub size: Option<LimitValue>,
    pub time: Option<LimitValue>,
    pub lookthrough: Option<LimitValue>,
    pub paged_size: Option<LimitValue>,
    pub paged_total: Option<LimitValue>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            size_limit: 500,
            time_limit: 3600,
            max_pdu_anonymous: 262_143,
            max_pdu_bound: 4_194_303,
            max_filter_depth: 512,
            max_pending_per_connection: 256,
            max_connections: 0,
            max_connections_per_ip: 0,
            idle_timeout: 0,
            lookthrough_limit: 0,
            paged_size_limit: 0,
            paged_total_limit: None,
            rules: Vec::new(),
        }
    }
}

/// Whom a `[[limits.rules]]` entry applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhoSpec {
    /// Everyone, bound or not (`*`).
    All,
    Anonymous,
    /// Every authenticated identity.
    Users,
    Exact(String),
    Subtree(String),
    /// Members (`member`) of a groupOfNames entry.
    Group(String),
}

impl WhoSpec {
    pub fn parse(who: &str) -> Result<WhoSpec, String> {
        let dn = |dn: &str| -> Result<String, String> {
            canopy_proto::Dn::parse(dn.as_bytes()).map_err(|e| format!("invalid DN: {e}"))?;
            Ok(dn.to_string())
        };
        match who.split_once(':') {
            None if who == "*" => Ok(WhoSpec::All),
            None if who == "anonymous" => Ok(WhoSpec::Anonymous),
            None if who == "users" => Ok(WhoSpec::Users),
            Some(("dn.exact" | "dn", rest)) => Ok(WhoSpec::Exact(dn(rest)?)),
            Some(("dn.subtree", rest)) => Ok(WhoSpec::Subtree(dn(rest)?)),
            Some(("group", rest)) => Ok(WhoSpec::Group(dn(rest)?)),
            _ => Err("expected anonymous, users, *, dn.exact:DN, dn.subtree:DN or group:DN".into()),
        }
    }

    /// Whether `who` is covered. DNs are normalized with the schema; a DN that does not normalize matches
    /// nobody.
    fn matches(&self, dir: &Directory, who: &Who, txn: &Snapshot) -> Result<bool, LdapError> {
        let norm = |dn: &str| dir.normalize(dn.as_bytes()).ok().map(|(_, ndn)| ndn);
        let Some(me) = &who.ndn else {
            return Ok(matches!(self, WhoSpec::All | WhoSpec::Anonymous));
        };
        Ok(match self {
            WhoSpec::All | WhoSpec::Users => true,
            WhoSpec::Anonymous => false,
            WhoSpec::Exact(dn) => norm(dn).is_some_and(|n| &n == me),
            WhoSpec::Subtree(dn) => norm(dn).is_some_and(|n| n.is_suffix_of(me)),
            WhoSpec::Group(dn) => match norm(dn) {
                Some(group) => is_member(dir, txn, &group, me)?,
                None => false,
            },
        })
    }
}

/// Whether `me` is among the `member` values of the entry `group`.
fn is_member(
    dir: &Directory,
    txn: &Snapshot,
    group: &NormDn,
    me: &NormDn,
) -> Result<bool, LdapError> {
    let Some((_, bytes)) = dir.lookup(txn, group)? else {
        return Ok(false);
    };
    let entry = canopy_directory::Directory::parse_stored(bytes)?
        .to_entry()
        .map_err(|_| {
            LdapError::new(
                canopy_proto::ResultCode::Other,
                "stored entry is unreadable",
            )
        })?;
    let Some(members) = entry.get("member") else {
        return Ok(false);
    };
    Ok(members.values.iter().any(|v| {
        dir.normalize(v)
            .ok()
            .is_some_and(|(_, member)| &member == me)
    }))
}

/// The search limits that apply to one identity; None is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    pub size: Option<u64>,
    pub time: Option<u64>,
    pub lookthrough: Option<u64>,
    pub paged_size: Option<u64>,
    pub paged_total: PagedTotal,
}

/// Most entries over all pages of a paged search (slapd `size.prtotal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagedTotal {
    /// Not set: the size limit applies across the pages.
    SizeLimit,
    Unlimited,
    Limited(u64),
    /// The paged results control is refused.
    Disabled,
}

impl From<LimitValue> for PagedTotal {
    fn from(v: LimitValue) -> PagedTotal {
        match v {
            LimitValue::Limited(n) => PagedTotal::Limited(n),
            LimitValue::Unlimited => PagedTotal::Unlimited,
            LimitValue::Disabled => PagedTotal::Disabled,
        }
    }
}

impl SearchLimits {
    const UNLIMITED: SearchLimits = SearchLimits {
        size: None,
        time: None,
        lookthrough: None,
        paged_size: None,
        paged_total: PagedTotal::Unlimited,
    };

    fn global(limits: &Limits) -> SearchLimits {
        let zero_none = |n: u64| (n > 0).then_some(n);
        SearchLimits {
            size: zero_none(u64::from(limits.size_limit)),
            time: zero_none(u64::from(limits.time_limit)),
            lookthrough: zero_none(limits.lookthrough_limit),
            paged_size: zero_none(limits.paged_size_limit),
            paged_total: limits
                .paged_total_limit
                .map_or(PagedTotal::SizeLimit, PagedTotal::from),
        }
    }

    fn with_rule(mut self, rule: &LimitRule) -> SearchLimits {
        let set = |slot: &mut Option<u64>, value: Option<LimitValue>| {
            if let Some(v) = value {
                *slot = v.count();
            }
        };
        set(&mut self.size, rule.size);
        set(&mut self.time, rule.time);
        set(&mut self.lookthrough, rule.lookthrough);
        set(&mut self.paged_size, rule.paged_size);
        if let Some(v) = rule.paged_total {
            self.paged_total = v.into();
        }
        self
    }

    /// The limits of `who` in database `dir`: none for the root DN, else the first matching rule over
    /// the global values.
    pub fn of(
        limits: &Limits,
        dir: &Directory,
        who: &Who,
        txn: &Snapshot,
    ) -> Result<SearchLimits, LdapError> {
        if who.root {
            return Ok(SearchLimits::UNLIMITED);
        }
        let global = SearchLimits::global(limits);
        for rule in &limits.rules {
            // Checked when the configuration was loaded.
            let Ok(spec) = WhoSpec::parse(&rule.who) else {
                continue;
            };
            if spec.matches(dir, who, txn)? {
                return Ok(global.with_rule(rule));
            }
        }
        Ok(global)
    }
}

/// Checks `[[limits.rules]]` (server-wide or a database's): the `who` clauses, and `disabled` only
/// for paged_total.
pub(crate) fn check_rules(rules: &[LimitRule]) -> Result<(), String> {
    for rule in rules {
        WhoSpec::parse(&rule.who).map_err(|e| format!("limits.rules who = {:?}: {e}", rule.who))?;
        let counts = [rule.size, rule.time, rule.lookthrough, rule.paged_size];
        if counts.contains(&Some(LimitValue::Disabled)) {
            return Err(format!(
                "limits.rules who = {:?}: \"disabled\" applies only to paged_total",
                rule.who
            ));
        }
    }
    Ok(())
}

/// A client's limit (0 = none requested) applied under a server limit: it may lower it, never raise it.
pub fn lower_only(client: i32, server: Option<u64>) -> Option<u64> {
    let client = u64::try_from(client).ok().filter(|c| *c > 0);
    match (client, server) {
        (Some(c), Some(s)) => Some(c.min(s)),
        (c, s) => c.or(s),
    }
}

/// Counts of open connections, shared by every listener of the server, and the signal that tells
/// them the server is shutting down.
#[derive(Debug)]
pub struct Connections {
    inner: Mutex<Counts>,
    closing: tokio::sync::watch::Sender<bool>,
}

impl Default for Connections {
    fn default() -> Self {
        Connections {
            inner: Mutex::default(),
            closing: tokio::sync::watch::channel(false).0,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a new connection was turned away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Total(usize),
    PerIp(IpAddr, usize),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Total(max) => write!(f, "too many connections (max_connections = {max})"),
            Refusal::PerIp(ip, max) => write!(
                f,
                "too many connections from {ip} (max_connections_per_ip = {max})"
            ),
        }
    }
}

/// One admitted connection; dropping it frees its place in the counts.
#[derive(Debug)]
pub struct Admitted {
    connections: Arc<Connections>,
    ip: Option<IpAddr>,
}

impl Connections {
    /// Admits a connection from `ip` (None for ldapi peers, which only count towards the total) or says
    /// which limit it would exceed. Zero limits are unlimited.
    pub fn admit(
        self: &Arc<Self>,
        ip: Option<IpAddr>,
        limits: &Limits,
    ) -> Result<Admitted, Refusal> {
        let mut counts = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if limits.max_connections > 0 && counts.total >= limits.max_connections {
            return Err(Refusal::Total(limits.max_connections));
        }
        if let Some(ip) = ip {
            let from_ip = counts.per_ip.get(&ip).copied().unwrap_or(0);
            if limits.max_connections_per_ip > 0 && from_ip >= limits.max_connections_per_ip {
                return Err(Refusal::PerIp(ip, limits.max_connections_per_ip));
            }
            counts.per_ip.insert(ip, from_ip + 1);
        }
        counts.total += 1;
        Ok(Admitted {
            connections: self.clone(),
            ip,
        })
    }

    /// Open connections in total.
    pub fn total(&self) -> usize {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).total
    }

    /// Tells every connection to stop reading requests: each ends once the operations it already
    /// received have answered (a graceful shutdown).
    pub fn close_all(&self) {
        self.closing.send_replace(true);
    }

    /// Completes once [`close_all`](Self::close_all) has been called (at once if it already was).
    pub async fn closed(&self) {
        let mut closing = self.closing.subscribe();
        let _ = closing.wait_for(|closing| *closing).await;
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self
            .connections
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        counts.total = counts.total.saturating_sub(1);
        if let Some(ip) = self.ip {
            if let Some(n) = counts.per_ip.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.per_ip.remove(&ip);
                }
            }
        }
    }
}

/// RFC 4511 §4.4.1 Notice of Disconnection with `code` and `reason`, encoded.
pub fn notice(code: ResultCode, reason: &str) -> Vec<u8> {
    let notice = ExtendedResponse {
        result: LdapResult::new(code, reason),
        name: Some(NOTICE_OF_DISCONNECTION.to_string()),
        value: None,
    };
    let mut out = Vec::with_capacity(64);
    LdapMessage {
        message_id: 0,
        op: ProtocolOp::ExtendedResponse(notice),
        controls: Vec::new(),
    }
    .encode(&mut out);
    out
}

/// Turns a connection away: a Notice of Disconnection with busy (51), then close. Bounded by a short timeout
/// so a client that does not read cannot hold the task.
pub async fn refuse<S: AsyncWrite + Unpin>(mut stream: S, refusal: &Refusal) {
    let bytes = notice(ResultCode::Busy, &refusal.to_string());
    let write = async {
        let _ = stream.write_all(&bytes).await;
        let _ = stream.shutdown().await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), write).await;
}

/// The deepest `max_filter_depth` a configuration may set: filters are decoded, planned and evaluated
/// recursively, so their depth is bounded by the threads' stacks.
pub const MAX_FILTER_DEPTH: usize = 1024;

/// Stack per thread of a filter nesting level, with room for unoptimized builds (about 12 frames a level).
const STACK_PER_FILTER_LEVEL: usize = 16 * 1024;

/// The stack size for the server's threads: enough for the deepest filter the limits admit, at least 8 MiB.
/// Only touched pages use memory.
pub fn thread_stack_size(limits: &Limits) -> usize {
    let depth = limits.max_filter_depth.min(MAX_FILTER_DEPTH);
    (8 << 20).max(1024 * 1024 + depth * STACK_PER_FILTER_LEVEL)
}

/// The idle timeout of a connection, None when it is off (OpenLDAP `idletimeout`, 0 = none).
pub fn idle_timeout(limits: &Limits) -> Option<Duration> {
    (limits.idle_timeout > 0).then(|| Duration::from_secs(limits.idle_timeout))
}

/// What a read on a connection brought.
pub enum Read {
    /// Bytes arrived.
    Data,
    /// The client closed the connection or it failed.
    Closed,
    /// No bytes and no outstanding operation for the whole idle timeout.
    Idle,
}

/// Bytes of a connection's read buffer kept in place ([`ReadBuf`]): a request that fits is read and
/// decoded without a heap buffer.
pub const FIRST_READ: usize = 512;

/// Bytes a partly filled buffer grows by when less than a quarter of that is free.
pub const READ_GROWTH: usize = 4096;

/// A heap read buffer larger than this is shrunk once the request that grew it has been taken.
const SHRINK_ABOVE: usize = 64 * 1024;

/// A connection's read buffer. Reads into an empty buffer land in a small array the connection keeps
/// (an idle connection holds it and no heap buffer, as the pending read of an empty buffer held an array
/// of that size before), and the requests it holds whole are decoded from it in place: no allocation per
/// request. A request that outgrows the array moves to a heap buffer, which grows in [`READ_GROWTH`]
/// steps and is released once every request in it has been taken.
pub struct ReadBuf {
    small: [u8; FIRST_READ],
    small_len: usize,
    /// Empty unless a request outgrew `small`; then it holds every byte not taken (and `small` none).
    heap: Vec<u8>,
}

impl Default for ReadBuf {
    fn default() -> Self {
        ReadBuf {
            small: [0; FIRST_READ],
            small_len: 0,
            heap: Vec::new(),
        }
    }
}

impl ReadBuf {
    /// The bytes read and not taken yet.
    pub fn data(&self) -> &[u8] {
        if self.heap.is_empty() {
            self.small.get(..self.small_len).unwrap_or(&[])
        } else {
            &self.heap
        }
    }

    /// Takes the first `n` bytes (whole requests): the heap buffer is released once emptied, and
    /// shrunk after a large request.
    pub fn take(&mut self, n: usize) {
        if !self.heap.is_empty() {
            if n >= self.heap.len() {
                self.heap = Vec::new();
            } else if n > 0 {
                self.heap.drain(..n);
                if self.heap.capacity() > SHRINK_ABOVE {
                    // Keep room for what remains, not for the largest request seen.
                    self.heap.shrink_to(self.heap.len().max(READ_GROWTH));
                }
            }
        } else if n >= self.small_len {
            self.small_len = 0;
        } else if n > 0 {
            self.small.copy_within(n..self.small_len, 0);
            self.small_len -= n;
        }
    }

    /// The heap buffer's capacity (0 while everything fits the array).
    pub fn heap_capacity(&self) -> usize {
        self.heap.capacity()
    }
}

/// Reads more bytes into `buf`. With an idle timeout, a wait that lasts that long while `busy()` says no
/// operation is outstanding ends as [`Read::Idle`]; while operations run, the wait simply starts over.
pub async fn read_or_idle<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut ReadBuf,
    idle: Option<Duration>,
    busy: impl Fn() -> bool,
) -> Read {
    loop {
        let outcome = match idle {
            None => Some(read_some(reader, buf).await),
            // Both reads are cancel safe: a timeout loses no bytes.
            Some(limit) => tokio::time::timeout(limit, read_some(reader, buf))
                .await
                .ok(),
        };
        match outcome {
            Some(Ok(0)) | Some(Err(_)) => return Read::Closed,
            Some(Ok(_)) => return Read::Data,
            None if busy() => continue,
            None => return Read::Idle,
        }
    }
}

/// One read into `buf`: into its array while the bytes fit, else into its heap buffer (see [`ReadBuf`]).
/// Cancel safe: bytes are stored in the same poll that reads them, and moving the array's bytes to the
/// heap buffer before a read loses none.
async fn read_some<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut ReadBuf,
) -> std::io::Result<usize> {
    if buf.heap.is_empty() {
        if let Some(free) = buf.small.get_mut(buf.small_len..).filter(|f| !f.is_empty()) {
            let n = reader.read(free).await?;
            buf.small_len += n;
            return Ok(n);
        }
        // A request larger than the array: its bytes move to the heap buffer, which grows from there.
        let mut heap = Vec::with_capacity(FIRST_READ + READ_GROWTH);
        heap.extend_from_slice(&buf.small);
        buf.heap = heap;
        buf.small_len = 0;
    }
    if buf.heap.capacity() - buf.heap.len() < READ_GROWTH / 4 {
        buf.heap.reserve(READ_GROWTH);
    }
    reader.read_buf(&mut buf.heap).await
}

/// One `olcLimits` value in slapd's words: `<who> <limit>=<value> ...`, whom as `*`, `anonymous`,
/// `users`, `dn[.exact|.base]="DN"`, `dn.subtree="DN"` or `group[/groupOfNames/member]="DN"`; limits
/// `size`, `time` (with `.soft`/`.hard`, one value here), `size.unchecked`, `size.pr` and
/// `size.prtotal`, each a number or `unlimited` (`size.prtotal` also `disabled`).
pub fn parse_limit_rule(text: &str) -> Result<LimitRule, String> {
    let text = text.trim();
    let (who_text, rest) = match text.find(char::is_whitespace) {
        Some(at) => (&text[..at], text[at..].trim()),
        None => (text, ""),
    };
    let unquote = |v: &str| v.trim_matches('"').to_string();
    let who = match who_text.split_once('=') {
        None if ["*", "anonymous", "users"].contains(&who_text.to_ascii_lowercase().as_str()) => {
            who_text.to_ascii_lowercase()
        }
        Some((kind, dn)) => match kind.to_ascii_lowercase().as_str() {
            "dn" | "dn.exact" | "dn.base" => format!("dn.exact:{}", unquote(dn)),
            "dn.subtree" => format!("dn.subtree:{}", unquote(dn)),
            "group" | "group/groupofnames/member" => format!("group:{}", unquote(dn)),
            other => return Err(format!("unsupported <who> \"{other}\"")),
        },
        None => return Err(format!("unknown <who> \"{who_text}\"")),
    };
    let mut rule = LimitRule {
        who,
        size: None,
        time: None,
        lookthrough: None,
        paged_size: None,
        paged_total: None,
    };
    if rest.is_empty() {
        return Err("no limit given".to_string());
    }
    for word in rest.split_whitespace() {
        let (name, value) = word
            .split_once('=')
            .ok_or_else(|| format!("\"{word}\": expected <limit>=<value>"))?;
        let value = match value.to_ascii_lowercase().as_str() {
            "unlimited" | "-1" => LimitValue::Unlimited,
            "disabled" => LimitValue::Disabled,
            number => LimitValue::Limited(
                number
                    .parse()
                    .map_err(|_| format!("\"{word}\": unable to parse limit"))?,
            ),
        };
        let slot = match name.to_ascii_lowercase().as_str() {
            "size" | "size.soft" | "size.hard" => &mut rule.size,
            "time" | "time.soft" | "time.hard" => &mut rule.time,
            "size.unchecked" => &mut rule.lookthrough,
            "size.pr" => &mut rule.paged_size,
            "size.prtotal" => &mut rule.paged_total,
            other => return Err(format!("unsupported limit \"{other}\"")),
        };
        *slot = Some(value);
    }
    check_rules(std::slice::from_ref(&rule))?;
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_specs() {
        assert_eq!(WhoSpec::parse("users"), Ok(WhoSpec::Users));
        assert_eq!(
            WhoSpec::parse("dn.subtree:ou=people,dc=x"),
            Ok(WhoSpec::Subtree("ou=people,dc=x".into()))
        );
        assert!(WhoSpec::parse("dn.regex:.*").is_err());
        assert!(WhoSpec::parse("group:not a dn").is_err());
    }

    #[test]
    fn rules_override_only_what_they_set() {
        let global = SearchLimits::global(&Limits::default());
        assert_eq!(global.size, Some(500));
        assert_eq!(global.lookthrough, None);
        let rule = LimitRule {
            who: "users".into(),
            size: Some(LimitValue::Limited(3)),
            time: None,
            lookthrough: Some(LimitValue::Limited(7)),
            paged_size: None,
            paged_total: Some(LimitValue::Unlimited),
        };
        let mine = global.with_rule(&rule);
        assert_eq!(mine.size, Some(3));
        assert_eq!(mine.time, Some(3600));
        assert_eq!(mine.lookthrough, Some(7));
        assert_eq!(mine.paged_total, PagedTotal::Unlimited);
    }

    #[test]
    fn clients_lower_but_never_raise() {
        assert_eq!(lower_only(0, Some(10)), Some(10));
        assert_eq!(lower_only(5, Some(10)), Some(5));
        assert_eq!(lower_only(50, Some(10)), Some(10));
        assert_eq!(lower_only(50, None), Some(50));
        assert_eq!(lower_only(-1, None), None);
    }

    #[tokio::test]
    async fn an_empty_buffer_is_read_into_the_array_and_a_large_request_grows_the_heap() {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let sent: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        client.write_all(&sent).await.unwrap();
        let mut buf = ReadBuf::default();
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, None, || false).await,
            Read::Data
        ));
        // The first read of an empty buffer takes at most the array's worth and allocates nothing.
        assert_eq!(buf.data(), &sent[..FIRST_READ]);
        assert_eq!(buf.heap_capacity(), 0);
        // A request larger than the array moves to the heap, which grows in large steps until
        // everything is in, in order.
        let mut reads = 1;
        while buf.data().len() < sent.len() {
            assert!(matches!(
                read_or_idle(&mut server, &mut buf, None, || false).await,
                Read::Data
            ));
            reads += 1;
            assert!(reads < 20, "{reads} reads for {} bytes", buf.data().len());
        }
        assert_eq!(buf.data(), &sent[..]);
        // Taking part of it keeps the rest in order; taking all of it releases the heap buffer.
        buf.take(19_000);
        assert_eq!(buf.data(), &sent[19_000..]);
        buf.take(1_000);
        assert!(buf.data().is_empty());
        assert_eq!(buf.heap_capacity(), 0);
        drop(client);
        assert!(matches!(
            read_or_idle(&mut server, &mut ReadBuf::default(), None, || false).await,
            Read::Closed
        ));
    }

    #[tokio::test]
    async fn requests_cut_by_reads_stay_in_the_array_while_they_fit() {
        let (mut client, mut server) = tokio::io::duplex(64 * 1024);
        let mut buf = ReadBuf::default();
        client.write_all(b"abcdef").await.unwrap();
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, None, || false).await,
            Read::Data
        ));
        // A whole request of four bytes taken, two bytes of the next one kept at the front.
        buf.take(4);
        assert_eq!(buf.data(), b"ef");
        client.write_all(b"gh").await.unwrap();
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, None, || false).await,
            Read::Data
        ));
        assert_eq!(buf.data(), b"efgh");
        assert_eq!(buf.heap_capacity(), 0);
        // Filling the array exactly, then one byte more: the bytes move to the heap, in order.
        let fill: Vec<u8> = (0..FIRST_READ - 4).map(|i| (i % 200) as u8).collect();
        client.write_all(&fill).await.unwrap();
        while buf.data().len() < FIRST_READ {
            assert!(matches!(
                read_or_idle(&mut server, &mut buf, None, || false).await,
                Read::Data
            ));
        }
        assert_eq!(buf.heap_capacity(), 0);
        client.write_all(b"z").await.unwrap();
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, None, || false).await,
            Read::Data
        ));
        let mut want = b"efgh".to_vec();
        want.extend_from_slice(&fill);
        want.push(b'z');
        assert_eq!(buf.data(), &want[..]);
        assert!(buf.heap_capacity() > FIRST_READ);
        buf.take(want.len());
        assert_eq!(buf.heap_capacity(), 0);
        assert!(buf.data().is_empty());
    }

    #[tokio::test]
    async fn idle_only_without_outstanding_operations() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let mut buf = ReadBuf::default();
        let idle = Some(Duration::from_millis(50));
        client.write_all(b"x").await.unwrap();
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, idle, || false).await,
            Read::Data
        ));
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, idle, || false).await,
            Read::Idle
        ));
        // Busy for the first few checks: the wait starts over instead of ending.
        let checks = std::sync::atomic::AtomicUsize::new(0);
        let busy = || checks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < 3;
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, idle, busy).await,
            Read::Idle
        ));
        assert_eq!(checks.load(std::sync::atomic::Ordering::Relaxed), 4);
        drop(client);
        assert!(matches!(
            read_or_idle(&mut server, &mut buf, None, || false).await,
            Read::Closed
        ));
    }

    fn limits(total: usize, per_ip: usize) -> Limits {
        Limits {
            max_connections: total,
            max_connections_per_ip: per_ip,
            ..Limits::default()
        }
    }

    #[test]
    fn total_and_per_ip_limits() {
        let c = Arc::new(Connections::default());
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let l = limits(3, 2);
        let first = c.admit(Some(a), &l).unwrap();
        let _second = c.admit(Some(a), &l).unwrap();
        assert_eq!(c.admit(Some(a), &l).unwrap_err(), Refusal::PerIp(a, 2));
        let _third = c.admit(Some(b), &l).unwrap();
        assert_eq!(c.admit(None, &l).unwrap_err(), Refusal::Total(3));
        drop(first);
        assert_eq!(c.total(), 2);
        let _again = c.admit(Some(a), &l).unwrap();
    }

    #[test]
    fn zero_is_unlimited() {
        let c = Arc::new(Connections::default());
        let l = limits(0, 0);
        let held: Vec<_> = (0..100).map(|_| c.admit(None, &l).unwrap()).collect();
        assert_eq!(c.total(), 100);
        drop(held);
        assert_eq!(c.total(), 0);
    }
}
