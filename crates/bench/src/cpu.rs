//! CPU time of this process (getrusage) and of another process by PID (/proc/PID/stat), so a report can show
//! that the client is cheaper than the server it loads.

use std::time::Duration;

/// User plus system CPU seconds used so far by this process, all threads included.
pub fn self_cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a complete rusage into the pointer it is given, which points to enough
    // properly aligned memory; RUSAGE_SELF is always a valid argument.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: zero-initialised and, on success, filled in by getrusage.
    let usage = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory effects; it returns -1 for an unknown name.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// utime + stime in clock ticks from the text of /proc/PID/stat.
pub fn parse_proc_stat(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    // After the name: state is field 3, utime field 14 and stime field 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// CPU seconds used so far by process `pid` (all its threads), None if it cannot be read.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(parse_proc_stat(&stat)? as f64 / clock_ticks_per_second())
}

/// CPU use as a percentage of one core over `wall`.
pub fn percent_of_core(cpu_seconds: f64, wall: Duration) -> f64 {
    let w = wall.as_secs_f64();
    if w > 0.0 {
        100.0 * cpu_seconds / w
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines() {
        let check =
            |line: &str, want: Option<u64>| assert_eq!(parse_proc_stat(line), want, "{line}");
        check(
            "1234 (slapd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 8 0 5000 1 2 3",
            Some(290),
        );
        check(
            "77 (we (ird) name) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 1 1",
            Some(10),
        );
        check("77 (short) R 1 2", None);
        check("no parens here", None);
        check("", None);
    }

    #[test]
    fn own_cpu_is_readable_and_grows() {
        let before = self_cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(self_cpu_seconds() > before);
        assert!(process_cpu_seconds(std::process::id()).is_some());
        assert_eq!(percent_of_core(0.5, Duration::from_secs(2)), 25.0);
    }
}
