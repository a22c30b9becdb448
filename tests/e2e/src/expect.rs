//! Expected-output files: a test collects a transcript, compares it with tests/e2e/expected/NAME.ldif,
//! or (with CANOPY_E2E_BLESS=1, against slapd only) writes it there.

use crate::client::Out;
use crate::server::Target;
use std::path::PathBuf;

/// Directory of the expected files.
pub fn expected_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("expected")
}

/// The record of one test: titled sections of result codes and normalized LDIF.
#[derive(Debug)]
pub struct Transcript {
    name: String,
    text: String,
}

impl Transcript {
    pub fn new(name: &str) -> Transcript {
        Transcript {
            name: name.to_string(),
            text: String::new(),
        }
    }

    /// Records a client run: its exit code (= the LDAP result code for ldap-utils) and its
    /// normalized stdout. Stderr is left out: diagnostic messages are free text that differs.
    pub fn section(&mut self, title: &str, out: &Out) {
        self.text
            .push_str(&format!("## {title}\n# rc: {}\n", out.code));
        self.text.push_str(&crate::ldif::normalize(&out.stdout));
        self.text.push('\n');
    }

    /// Records a client run whose stdout is not LDIF (ldapwhoami, ldapcompare, python): exit code
    /// and stdout verbatim.
    /// "Additional info" lines are left out: that text is the server's free-form diagnostic.
    pub fn raw(&mut self, title: &str, out: &Out) {
        let body: String = out
            .stdout
            .lines()
            .filter(|l| {
                !l.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("additional info")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        self.text(title, &format!("# rc: {}\n{body}", out.code));
    }

    /// Records free text (for outputs that are not LDIF, e.g. ldapwhoami or python scripts).
    pub fn text(&mut self, title: &str, body: &str) {
        self.text
            .push_str(&format!("## {title}\n{}", body.trim_end()));
        self.text.push_str("\n\n");
    }

    /// Compares with the expected file, or writes it when blessing.
    pub fn check(self) {
        let path = expected_dir().join(format!("{}.ldif", self.name));
        let header = "# Expected output recorded from OpenLDAP slapd (CANOPY_E2E_BLESS=1); \
                      see docs/testing.md.\n\n";
        let actual = format!("{header}{}", self.text);
        if bless_requested() {
            assert!(
                Target::from_env() == Target::Slapd,
                "CANOPY_E2E_BLESS=1 only works with CANOPY_E2E_TARGET=slapd: expected files \
                 record OpenLDAP's behaviour"
            );
            std::fs::write(&path, &actual)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            return;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read {} ({e}); generate it with CANOPY_E2E_BLESS=1 \
                 CANOPY_E2E_TARGET=slapd",
                path.display()
            )
        });
        if expected != actual {
            let keep = std::env::temp_dir().join(format!("canopy-e2e-actual-{}.ldif", self.name));
            let _ = std::fs::write(&keep, &actual);
            panic!(
                "output differs from {} (actual saved in {}):\n{}",
                path.display(),
                keep.display(),
                diff(&expected, &actual)
            );
        }
    }
}

pub fn bless_requested() -> bool {
    std::env::var("CANOPY_E2E_BLESS").is_ok_and(|v| v == "1")
}

/// A line diff (longest common subsequence), `-` expected, `+` actual, with 2 lines of context.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        let lo = k.saturating_sub(2);
        let hi = (k + 2).min(ops.len() - 1);
        ops[lo..=hi].iter().any(|(op, _)| *op != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if near_change(k) {
            out.push_str(&format!("{op} {line}\n"));
            skipped = false;
        } else if !skipped {
            out.push_str("  ...\n");
            skipped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn diffs_lines() {
        let cases: &[(&str, &str, &str)] = &[
            ("a\nb\nc\n", "a\nB\nc\n", "  a\n- b\n+ B\n  c\n"),
            ("a\n", "a\nb\n", "  a\n+ b\n"),
            (
                "1\n2\n3\n4\n5\n6\n7\n",
                "1\n2\n3\n4\n5\n6\n8\n",
                "  ...\n  5\n  6\n- 7\n+ 8\n",
            ),
        ];
        for (e, a, want) in cases {
            assert_eq!(diff(e, a), *want);
        }
    }
}
