//! One benchmark client: a thread with its own session(s) that follows the run's timeline (fill, warm-up,
//! measured steps), closed loop or on an open-loop send schedule, and times every request.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use canopy_proto::ResultCode;

use crate::ldap::{Conn, LdapError};
use crate::stats::PhaseStats;
use crate::workload::{Identity, Keyspace, Next, Script, Session, Workload};

/// After a failed connection a client waits this long before trying again, so a dead server is not spun on.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Longest gap between two sends of one client in open loop.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// One measured step: warm-up from `warm` to `start`, measurement from `start` to `end`.
#[derive(Debug, Clone, Copy)]
pub struct PhaseTimes {
    /// Offered requests per second over all clients; None for closed loop.
    pub rate: Option<f64>,
    pub warm: Instant,
    pub start: Instant,
    pub end: Instant,
}

impl PhaseTimes {
    pub fn seconds(&self) -> usize {
        self.end
            .saturating_duration_since(self.start)
            .as_secs_f64()
            .ceil() as usize
    }
}

/// The shared schedule of a run against one server.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// The delete workload adds the entries it will delete until this instant (unmeasured).
    pub fill_end: Instant,
    pub phases: Vec<PhaseTimes>,
}

/// Which client this is among how many.
#[derive(Debug, Clone, Copy)]
pub struct ClientId {
    pub index: usize,
    pub total: usize,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

pub fn error_key(e: &LdapError) -> String {
    match e {
        LdapError::Io(io) => format!("io: {:?}", io.kind()),
        LdapError::Closed => "connection closed by server".into(),
        LdapError::Frame(_)
        | LdapError::Decode(_)
        | LdapError::WrongId { .. }
        | LdapError::Unexpected(_) => "protocol error from server".into(),
        LdapError::Url(_) | LdapError::Resolve(_) => "bad address".into(),
    }
}

pub fn code_key(code: ResultCode) -> String {
    format!("{} {:?}", code.code(), code)
}

/// Why a session could not be opened.
enum OpenError {
    Transport(LdapError),
    Bind(ResultCode),
}

/// Connects and binds as `who`; returns the session and the time it took.
fn open_session(
    addr: &SocketAddr,
    script: &mut Script,
    who: Identity,
) -> Result<(Conn, Duration), OpenError> {
    let t0 = Instant::now();
    let mut conn = Conn::connect(addr).map_err(OpenError::Transport)?;
    if let Some(bind) = script.bind_for(who) {
        let outcome = conn.request(bind).map_err(OpenError::Transport)?;
        if outcome.code != ResultCode::Success {
            return Err(OpenError::Bind(outcome.code));
        }
    }
    Ok((conn, t0.elapsed()))
}

fn record_open_error(stats: &mut PhaseStats, e: OpenError) {
    match e {
        OpenError::Transport(e) => stats.error(error_key(&e)),
        OpenError::Bind(code) => stats.error(format!("bind: {}", code_key(code))),
    }
}

/// Adds entries for the delete workload until `until`, on its own admin session.
fn fill(addr: &SocketAddr, script: &mut Script, until: Instant) {
    let Ok((mut conn, _)) = open_session(addr, script, Identity::Admin) else {
        return;
    };
    while Instant::now() < until {
        match conn.request(script.add_request()) {
            Ok(o) if o.code == ResultCode::Success => {}
            Ok(_) => script.add_failed(),
            Err(_) => {
                script.add_failed();
                return;
            }
        }
    }
    conn.unbind();
}

/// Deletes whatever this client added and has not deleted yet, so runs can repeat.
fn cleanup(addr: &SocketAddr, script: &mut Script) {
    if script.added_left() == 0 {
        return;
    }
    let Ok((mut conn, _)) = open_session(addr, script, Identity::Admin) else {
        return;
    };
    while let Some(msg) = script.delete_request() {
        if conn.request(msg).is_err() {
            return;
        }
    }
    conn.unbind();
}

/// Runs one client through the whole timeline; returns one `PhaseStats` per phase.
pub fn run_client(
    ks: &Keyspace,
    addr: &SocketAddr,
    id: ClientId,
    tl: &Timeline,
) -> Vec<PhaseStats> {
    let mut stats: Vec<PhaseStats> = tl
        .phases
        .iter()
        .map(|p| PhaseStats::new(p.seconds()))
        .collect();
    let mut script = Script::new(ks, id.index);
    let persistent = ks.session == Session::Persistent;
    let mut conn: Option<Conn> = None;
    if ks.workload == Workload::Delete {
        fill(addr, &mut script, tl.fill_end);
    }
    if persistent {
        let who = script.identity();
        match open_session(addr, &mut script, who) {
            Ok((c, took)) => {
                if let Some(s) = stats.first_mut() {
                    s.connect.record(us(took));
                }
                conn = Some(c);
            }
            Err(e) => {
                if let Some(s) = stats.first_mut() {
                    record_open_error(s, e);
                }
            }
        }
    }
    'phases: for (phase, s) in tl.phases.iter().zip(stats.iter_mut()) {
        // Open loop: client k of n sends at warm + k/R, then every n/R seconds.
        // Rates are validated by the master; anything absurd still yields a long wait, never a panic.
        let secs = |x: f64| {
            Duration::try_from_secs_f64(x)
                .unwrap_or(MAX_WAIT)
                .min(MAX_WAIT)
        };
        let rate = phase.rate.filter(|r| *r > 0.0);
        let interval = rate.map(|r| secs(id.total as f64 / r));
        let mut due = match rate {
            Some(r) => phase.warm + secs(id.index as f64 / r),
            None => phase.warm,
        };
        loop {
            let now = Instant::now();
            if now >= phase.end {
                break;
            }
            let scheduled = match interval {
                Some(step) => {
                    if due >= phase.end {
                        break;
                    }
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    let d = due;
                    due += step;
                    d
                }
                None => now,
            };
            let measured = scheduled >= phase.start;
            // A session for this request: the persistent one, or a fresh one (per-op).
            let mut connect_time = None;
            if conn.is_none() {
                let who = script.identity();
                match open_session(addr, &mut script, who) {
                    Ok((c, took)) => {
                        conn = Some(c);
                        connect_time = Some(took);
                    }
                    Err(e) => {
                        if measured {
                            record_open_error(s, e);
                        }
                        std::thread::sleep(RETRY_PAUSE);
                        continue;
                    }
                }
            }
            let Some(c) = conn.as_mut() else { continue };
            let sent = Instant::now();
            let msg = match script.next_request() {
                Next::Op(msg) => msg,
                Next::Exhausted => {
                    s.exhausted += 1;
                    break 'phases;
                }
            };
            let result = c.request(msg);
            let done = Instant::now();
            match result {
                Ok(outcome) => {
                    if outcome.code != ResultCode::Success && ks.workload == Workload::Add {
                        script.add_failed();
                    }
                    if measured {
                        if let Some(t) = connect_time {
                            s.connect.record(us(t));
                        }
                        s.processing.record(us(done - sent));
                        s.response
                            .record(us(done.saturating_duration_since(scheduled)));
                        s.completed += 1;
                        s.entries += outcome.entries;
                        s.bytes += outcome.bytes;
                        let sec = done.saturating_duration_since(phase.start).as_secs() as usize;
                        let last = s.per_second.len().saturating_sub(1);
                        if let Some(slot) = s.per_second.get_mut(sec.min(last)) {
                            *slot += 1;
                        }
                        if outcome.code != ResultCode::Success {
                            s.error(code_key(outcome.code));
                        }
                    }
                    if !persistent {
                        if let Some(c) = conn.take() {
                            c.unbind();
                        }
                    }
                }
                Err(e) => {
                    if ks.workload == Workload::Add {
                        script.add_failed();
                    }
                    if measured {
                        s.error(error_key(&e));
                    }
                    conn = None;
                }
            }
        }
        if let Some(step) = interval {
            // Sends that fell due in the window but were never made: the client could not keep up.
            while due < phase.end {
                if due >= phase.start {
                    s.missed += 1;
                }
                due += step;
            }
        }
    }
    if let Some(c) = conn.take() {
        c.unbind();
    }
    cleanup(addr, &mut script);
    stats
}
