//! The operation log (the `access_log` setting; not the accesslog overlay, which is
//! `canopy_directory::overlay::accesslog`): one line per completed operation, in slapd's `conn=N op=M`
//! style or as JSON lines, to standard error or a file that SIGHUP reopens (logrotate). Nothing secret is ever written: DNs,
//! filters as `redact` shows them, result codes and counts, never a credential or an attribute value of
//! a write.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use canopy_directory::opattrs::civil;

use crate::config::{Config, LogFormat};
use crate::metrics::OpType;

/// Where the operation log goes.
enum Target {
    Stderr,
    File { path: PathBuf, file: Mutex<File> },
}

/// The operation log: where its lines go and in which format.
pub struct OpLog {
    format: LogFormat,
    target: Target,
}

/// One completed operation.
pub struct Record<'a> {
    pub conn: u64,
    pub op: u64,
    pub kind: OpType,
    /// The operation's DN: the target, a search's base, a bind's name.
    pub dn: &'a str,
    /// Operation details as `key=value` pairs (a search's scope and filter, a rename's new RDN, an
    /// extended operation's OID, a bind's method).
    pub details: &'a [(&'static str, String)],
    /// None when the operation sends no response (unbind, abandon, an abandoned search).
    pub code: Option<u32>,
    pub entries: u64,
    pub took: Duration,
    pub peer: &'a str,
    /// The connection's bound DN when the operation started ("" for anonymous).
    pub authz: &'a str,
}

fn open_append(path: &PathBuf) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl OpLog {
    /// The configured operation log, or None when `access_log` is not set.
    pub fn open(config: &Config) -> std::io::Result<Option<OpLog>> {
        let target = match config.access_log.as_deref() {
            None => return Ok(None),
            Some("stderr") => Target::Stderr,
            Some(path) => {
                let path = PathBuf::from(path);
                let file = open_append(&path)?;
                Target::File {
                    path,
                    file: Mutex::new(file),
                }
            }
        };
        Ok(Some(OpLog {
            format: config.log_format,
            target,
        }))
    }

    /// Opens the file again under its configured name (after logrotate moved it away).
    pub fn reopen(&self) -> std::io::Result<()> {
        if let Target::File { path, file } = &self.target {
            let fresh = open_append(path)?;
            *file.lock().unwrap_or_else(|e| e.into_inner()) = fresh;
        }
        Ok(())
    }

    /// Writes one line (a single write call, so lines never interleave).
    pub fn write(&self, record: &Record<'_>) {
        let line = match self.format {
            LogFormat::Text => text_line(record),
            LogFormat::Json => json_line(record),
        };
        let written = match &self.target {
            Target::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
            Target::File { file, .. } => file
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_all(line.as_bytes()),
        };
        if let Err(error) = written {
            tracing::warn!(%error, "cannot write the access log");
        }
    }

    /// A connection line outside any operation (accepted, closed).
    pub fn connection(&self, conn: u64, event: &str, peer: &str) {
        let line = match self.format {
            LogFormat::Text => format!("{} conn={conn} {event} peer={}\n", now(), quote(peer)),
            LogFormat::Json => {
                let value = serde_json::json!({
                    "time": now(), "conn": conn, "event": event, "peer": peer,
                });
                format!("{value}\n")
            }
        };
        let written = match &self.target {
            Target::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
            Target::File { file, .. } => file
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .write_all(line.as_bytes()),
        };
        if let Err(error) = written {
            tracing::warn!(%error, "cannot write the access log");
        }
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`.
fn now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let (y, mo, d, h, mi, s) = civil(i64::try_from(since.as_secs()).unwrap_or(0));
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:06}Z",
        since.subsec_micros()
    )
}

/// A double-quoted value with `"` and `\` escaped and control characters as `\xx` hex.
fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn text_line(r: &Record<'_>) -> String {
    let mut line = format!(
        "{} conn={} op={} {} dn={}",
        now(),
        r.conn,
        r.op,
        r.kind.log_word(),
        quote(r.dn)
    );
    for (key, value) in r.details {
        let _ = write!(line, " {key}={}", quote(value));
    }
    match r.code {
        Some(code) => {
            let _ = write!(line, " err={code}");
        }
        None => line.push_str(" err=-"),
    }
    if r.kind == OpType::Search {
        let _ = write!(line, " nentries={}", r.entries);
    }
    let _ = writeln!(
        line,
        " etime={:.6} peer={} authz={}",
        r.took.as_secs_f64(),
        quote(r.peer),
        quote(r.authz)
    );
    line
}

fn json_line(r: &Record<'_>) -> String {
    let mut value = serde_json::json!({
        "time": now(),
        "conn": r.conn,
        "op": r.op,
        "type": r.kind.label(),
        "dn": r.dn,
        "err": r.code,
        "etime": r.took.as_secs_f64(),
        "peer": r.peer,
        "authz": r.authz,
    });
    if let Some(map) = value.as_object_mut() {
        for (key, detail) in r.details {
            map.insert((*key).to_string(), serde_json::Value::from(detail.as_str()));
        }
        if r.kind == OpType::Search {
            map.insert("nentries".into(), serde_json::Value::from(r.entries));
        }
    }
    format!("{value}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(details: &'a [(&'static str, String)]) -> Record<'a> {
        Record {
            conn: 1000,
            op: 2,
            kind: OpType::Search,
            dn: "dc=example,dc=com",
            details,
            code: Some(0),
            entries: 3,
            took: Duration::from_micros(250),
            peer: "IP=127.0.0.1:4711",
            authz: "",
        }
    }

    #[test]
    fn text_lines_are_slapd_style_and_quoted() {
        let details = [
            ("scope", "2".to_string()),
            ("filter", "(cn=a\"b)".to_string()),
        ];
        let line = text_line(&record(&details));
        let rest = line.split_once(' ').map(|(_, rest)| rest).unwrap_or("");
        assert_eq!(
            rest,
            "conn=1000 op=2 SRCH dn=\"dc=example,dc=com\" scope=\"2\" filter=\"(cn=a\\\"b)\" err=0 \
             nentries=3 etime=0.000250 peer=\"IP=127.0.0.1:4711\" authz=\"\"\n"
        );
    }

    #[test]
    fn json_lines_parse_and_carry_the_fields() {
        let details = [("scope", "2".to_string())];
        let line = json_line(&record(&details));
        let value: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(value["conn"], 1000);
        assert_eq!(value["type"], "search");
        assert_eq!(value["nentries"], 3);
        assert_eq!(value["scope"], "2");
        assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(quote("a\nb"), "\"a\\0ab\"");
    }
}
