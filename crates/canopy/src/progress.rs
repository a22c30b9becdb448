//! Progress of the long offline tools on standard error: a bar redrawn in place on a terminal, plain
//! periodic lines (one every few seconds, and a last one) when standard error is a file or a pipe, so a
//! log or a journal gets readable lines without carriage returns or escape codes.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a terminal bar is redrawn.
const TERMINAL_EVERY: Duration = Duration::from_millis(200);
/// How often a plain line is written when standard error is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);
const BAR_WIDTH: usize = 30;

/// What is counted: entries, or bytes (shown in MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Entries,
    Bytes,
}

pub struct Progress {
    label: String,
    unit: Unit,
    /// The expected end, when known.
    total: Option<u64>,
    terminal: bool,
    every: Duration,
    start: Instant,
    last: Option<Instant>,
    drawn: bool,
}

impl Progress {
    /// Progress of `label` towards `total` (None when unknown) on standard error.
    pub fn new(label: &str, unit: Unit, total: Option<u64>) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress {
            label: label.to_string(),
            unit,
            total: total.filter(|t| *t > 0),
            terminal,
            every: if terminal {
                TERMINAL_EVERY
            } else {
                PLAIN_EVERY
            },
            start: Instant::now(),
            last: None,
            drawn: false,
        }
    }

    /// Notes that `done` units are done; shows it when the last showing is old enough.
    pub fn set(&mut self, done: u64) {
        let now = Instant::now();
        let due = match self.last {
            None => now.duration_since(self.start) >= self.every,
            Some(last) => now.duration_since(last) >= self.every,
        };
        if due {
            self.last = Some(now);
            self.show(done, false);
        }
    }

    /// Shows the final count (always, on its own line).
    pub fn finish(&mut self, done: u64) {
        self.show(done, true);
    }

    fn show(&mut self, done: u64, last: bool) {
        let line = self.line(done, last);
        let mut err = std::io::stderr().lock();
        // Progress that cannot be written is not worth failing the tool for.
        let _ = if self.terminal {
            self.drawn = !last;
            write!(err, "\r{line}\x1b[K{}", if last { "\n" } else { "" })
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn line(&self, done: u64, last: bool) -> String {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let amount = |n: u64| match self.unit {
            Unit::Entries => format!("{n}"),
            Unit::Bytes => format!("{:.1}", n as f64 / 1048576.0),
        };
        let unit = match self.unit {
            Unit::Entries => "entries",
            Unit::Bytes => "MiB",
        };
        let rate = match self.unit {
            Unit::Entries => format!("{rate:.0} entries/s"),
            Unit::Bytes => format!("{:.1} MiB/s", rate / 1048576.0),
        };
        let mut line = format!("{}: ", self.label);
        match self.total {
            Some(total) => {
                let fraction = (done as f64 / total as f64).min(1.0);
                if self.terminal {
                    let filled = (fraction * BAR_WIDTH as f64) as usize;
                    line.push('[');
                    line.push_str(&"#".repeat(filled));
                    line.push_str(&".".repeat(BAR_WIDTH - filled.min(BAR_WIDTH)));
                    line.push_str("] ");
                }
                line.push_str(&format!(
                    "{}/{} {unit} ({:.0}%), {rate}",
                    amount(done),
                    amount(total),
                    fraction * 100.0
                ));
                if !last && fraction > 0.0 && fraction < 1.0 {
                    let left = secs / fraction - secs;
                    line.push_str(&format!(", {left:.0}s left"));
                }
            }
            None => line.push_str(&format!("{} {unit}, {rate}", amount(done))),
        }
        line.push_str(&format!(", {secs:.1}s"));
        if last {
            line.push_str(", done");
        }
        line
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // A bar left mid-line (an error ended the tool) gets its line ended before the error prints.
        if self.terminal && self.drawn {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_have_no_control_characters() {
        let mut p = Progress::new("export", Unit::Entries, Some(200));
        p.terminal = false;
        let line = p.line(50, false);
        assert!(line.starts_with("export: 50/200 entries (25%), "), "{line}");
        assert!(!line.chars().any(|c| c.is_control()), "{line}");
        let done = p.line(200, true);
        assert!(
            done.contains("(100%)") && done.ends_with(", done"),
            "{done}"
        );
        let bytes = Progress::new("backup", Unit::Bytes, None);
        assert!(bytes.line(3 << 20, false).starts_with("backup: 3.0 MiB, "));
    }

    #[test]
    fn a_terminal_gets_a_bar() {
        let mut p = Progress::new("reindex", Unit::Entries, Some(10));
        p.terminal = true;
        let line = p.line(5, false);
        assert!(
            line.contains(&format!("[{}{}]", "#".repeat(15), ".".repeat(15))),
            "{line}"
        );
    }
}
