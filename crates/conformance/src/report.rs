//! The human-readable report: each difference with the request that caused it (as a replayable
//! command), then counts by source, by kind of difference and by filter atom.

use crate::case::{Case, Request};
use crate::compare::{Difference, Kind};
use canopy_proto::Filter;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Detail lines shown per case; the rest are counted.
const MAX_LINES_PER_CASE: usize = 25;

/// Tallies for the summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: usize,
    pub differ: usize,
    /// Steps of write sequences not run because an earlier step of the sequence differed.
    pub skipped: usize,
    /// source (corpus file or seed) -> (cases, differing)
    by_source: BTreeMap<String, (usize, usize)>,
    /// kind -> differing cases showing it
    by_kind: BTreeMap<Kind, usize>,
    /// filter atom -> (searches using it, differing searches using it)
    by_atom: BTreeMap<String, (usize, usize)>,
    /// DN spelling differences (same entry by normalized DN): detail -> (cases, first case).
    /// Kept apart so that one oddly spelled entry does not mark every search that returns it.
    pub dn_forms: BTreeMap<String, (usize, String)>,
    /// Cases marked deliberate that differed as documented: (origin, reason).
    pub deliberate: Vec<(String, String)>,
    /// Culprit atom (see `shrink`) -> (differing cases, first culprit filter, first case).
    by_culprit: BTreeMap<String, (usize, String, String)>,
}

impl Tally {
    pub fn agree(&self) -> usize {
        self.cases - self.differ - self.deliberate.len()
    }

    /// Whether anything at all differed, DN spellings included (the exit status).
    pub fn any_difference(&self) -> bool {
        self.differ > 0 || !self.dn_forms.is_empty()
    }

    /// Records one case; returns the report text for it when it differs.
    /// `culprits`: leaf filters that differ on their own (empty when not narrowed down).
    pub fn record(
        &mut self,
        case: &Case,
        all: &[Difference],
        culprits: &[Filter],
    ) -> Option<String> {
        self.cases += 1;
        let (forms, diffs): (Vec<&Difference>, Vec<&Difference>) =
            all.iter().partition(|d| d.kind == Kind::DnForm);
        for f in forms {
            self.dn_forms
                .entry(f.detail.clone())
                .or_insert_with(|| (0, case.origin.clone()))
                .0 += 1;
        }
        let differs = !diffs.is_empty();
        let slot = self.by_source.entry(source(&case.origin)).or_default();
        slot.0 += 1;
        let used: BTreeSet<String> = match &case.request {
            Request::Search(r) => {
                let mut set = BTreeSet::new();
                atoms(&r.filter, &mut set);
                set
            }
            _ => BTreeSet::new(),
        };
        for a in &used {
            let s = self.by_atom.entry(a.clone()).or_default();
            s.0 += 1;
            s.1 += usize::from(differs);
        }
        match (&case.deliberate, differs) {
            (Some(reason), true) => {
                self.deliberate.push((case.origin.clone(), reason.clone()));
                return None;
            }
            (Some(reason), false) => {
                slot.1 += 1;
                self.differ += 1;
                return Some(format!(
                    "DIFF [{}]\n  marked deliberate ({reason}) but both servers now agree: remove the mark \
                     and its entry in docs/compatibility.md\n",
                    case.origin
                ));
            }
            (None, false) => return None,
            (None, true) => {}
        }
        slot.1 += 1;
        self.differ += 1;
        let kinds: BTreeSet<Kind> = diffs.iter().map(|d| d.kind).collect();
        for k in kinds {
            *self.by_kind.entry(k).or_default() += 1;
        }
        let mut keys = BTreeSet::new();
        for c in culprits {
            atoms(c, &mut keys);
        }
        if keys.is_empty() && matches!(case.request, Request::Search(_)) {
            keys.insert("(no single leaf: the combination, base, attributes or limits)".into());
        }
        for k in keys {
            let first = culprits
                .iter()
                .find(|c| {
                    let mut one = BTreeSet::new();
                    atoms(c, &mut one);
                    one.contains(&k)
                })
                .map(|c| c.to_string())
                .unwrap_or_default();
            self.by_culprit
                .entry(k)
                .or_insert_with(|| (0, first, case.origin.clone()))
                .0 += 1;
        }
        Some(render_case(case, &diffs, culprits))
    }

    pub fn summary(&self) -> String {
        let mut s = String::new();
        if !self.deliberate.is_empty() {
            let _ = writeln!(
                s,
                "== deliberate differences (documented, not counted as differing)"
            );
            for (origin, reason) in &self.deliberate {
                let _ = writeln!(s, "  [{origin}] {reason}");
            }
        }
        let _ = writeln!(s, "== by source (cases, differ)");
        for (src, (n, d)) in &self.by_source {
            let _ = writeln!(s, "  {src}: {n} cases, {d} differ");
        }
        let _ = writeln!(s, "== differing cases by kind of difference");
        for (k, n) in &self.by_kind {
            let _ = writeln!(s, "  {k}: {n}");
        }
        let mut culprits: Vec<(&String, &(usize, String, String))> =
            self.by_culprit.iter().collect();
        culprits.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
        let _ = writeln!(
            s,
            "== differing searches by culprit leaf (cases, first culprit, first case)"
        );
        for (atom, (n, example, first)) in culprits {
            let example = shorten(example, 160);
            let _ = writeln!(s, "  {n:5}  {atom}   e.g. {example} [{first}]");
        }
        let mut atoms: Vec<(&String, &(usize, usize))> =
            self.by_atom.iter().filter(|(_, (_, d))| *d > 0).collect();
        atoms.sort_by(|a, b| {
            let ra = a.1 .1 as f64 / a.1 .0 as f64;
            let rb = b.1 .1 as f64 / b.1 .0 as f64;
            rb.total_cmp(&ra).then(b.1 .1.cmp(&a.1 .1))
        });
        let _ = writeln!(
            s,
            "== filter atoms in differing searches (differing/using; atoms always in differing \
             searches first)"
        );
        for (atom, (n, d)) in atoms.iter().take(60) {
            let _ = writeln!(s, "  {d}/{n}  {atom}");
        }
        if !self.dn_forms.is_empty() {
            let _ = writeln!(
                s,
                "== DN string form differences (same entry by normalized DN, other spelling; \
                 not counted as differing cases, but they fail the run)"
            );
            for (detail, (n, first)) in &self.dn_forms {
                let _ = writeln!(s, "  {detail}  ({n} cases, first [{first}])");
            }
        }
        let deliberate = match self.deliberate.len() {
            0 => String::new(),
            n => format!(", deliberate: {n}"),
        };
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(", skipped after a differing step of their sequence: {n}"),
        };
        let _ = writeln!(
            s,
            "cases: {}, agree: {}, differ: {}{deliberate}{skipped}",
            self.cases,
            self.agree(),
            self.differ
        );
        s
    }
}

/// `s` cut to about `max` bytes at a character boundary, marked when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", s.get(..end).unwrap_or(""), s.len())
}

/// `file.corpus` from `file.corpus:12`, `seed 3` from `seed 3 #45`.
fn source(origin: &str) -> String {
    if let Some((seed, _)) = origin.split_once(" #") {
        return seed.to_string();
    }
    origin
        .split_once(':')
        .map(|(f, _)| f.to_string())
        .unwrap_or_else(|| origin.to_string())
}

fn render_case(case: &Case, diffs: &[&Difference], culprits: &[Filter]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "DIFF [{}]", case.origin);
    for line in case.replay("\"$URL\"").lines() {
        let _ = writeln!(s, "  {line}");
    }
    for c in culprits {
        let _ = writeln!(s, "  culprit (differs alone, same base and scope): {c}");
    }
    for d in diffs.iter().take(MAX_LINES_PER_CASE) {
        let _ = writeln!(s, "  - {}: {}", d.kind, d.detail);
    }
    if diffs.len() > MAX_LINES_PER_CASE {
        let _ = writeln!(s, "  ... {} more", diffs.len() - MAX_LINES_PER_CASE);
    }
    s
}

/// The leaf filters of `f` as `type attribute[:rule][:dn]`, lower-cased, for grouping.
pub fn atoms(f: &Filter, out: &mut BTreeSet<String>) {
    let mut add = |kind: &str, attr: &str| {
        out.insert(format!("{kind} {}", attr.to_ascii_lowercase()));
    };
    match f {
        Filter::And(list) | Filter::Or(list) => list.iter().for_each(|g| atoms(g, out)),
        Filter::Not(inner) => atoms(inner, out),
        Filter::Equality(a, _) => add("eq", a),
        Filter::Substrings(sub) => add("sub", &sub.attr),
        Filter::GreaterOrEqual(a, _) => add("ge", a),
        Filter::LessOrEqual(a, _) => add("le", a),
        Filter::Present(a) => add("present", a),
        Filter::Approx(a, _) => add("approx", a),
        Filter::Extensible(m) => {
            let attr = m.attr.as_deref().unwrap_or("");
            let rule = m.rule.as_deref().unwrap_or("");
            let dn = if m.dn_attributes { ":dn" } else { "" };
            add("ext", &format!("{attr}:{rule}{dn}"));
        }
        Filter::Undefined => add("undefined", ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Identity;
    use canopy_proto::{DerefAliases, SearchRequest, SearchScope};

    fn case(origin: &str, filter: &str) -> Case {
        Case {
            origin: origin.into(),
            identity: Identity::Anonymous,
            request: Request::Search(SearchRequest {
                base: b"dc=x".to_vec(),
                scope: SearchScope::WholeSubtree,
                deref: DerefAliases::Never,
                size_limit: 0,
                time_limit: 0,
                types_only: false,
                filter: Filter::parse(filter).unwrap(),
                attributes: vec![],
            }),
            controls: vec![],
            deliberate: None,
        }
    }

    #[test]
    fn tallies_and_summary() {
        let mut t = Tally::default();
        assert!(t.record(&case("a.corpus:1", "(cn=x)"), &[], &[]).is_none());
        let d = Difference {
            kind: Kind::MissingEntry,
            detail: "cn=x,dc=x".into(),
        };
        let text = t
            .record(
                &case("seed 1 #4", "(&(CN~=x)(sn:caseExactMatch:=y))"),
                &[d],
                &[Filter::parse("(CN~=x)").unwrap()],
            )
            .unwrap();
        assert!(
            text.contains("culprit (differs alone, same base and scope): (CN~=x)"),
            "{text}"
        );
        assert!(
            text.starts_with("DIFF [seed 1 #4]\n  ldapsearch -H \"$URL\""),
            "{text}"
        );
        assert!(
            text.contains("entry missing in canopy: cn=x,dc=x"),
            "{text}"
        );
        let sum = t.summary();
        assert!(sum.ends_with("cases: 2, agree: 1, differ: 1\n"), "{sum}");
        assert!(sum.contains("a.corpus: 1 cases, 0 differ"), "{sum}");
        assert!(sum.contains("seed 1: 1 cases, 1 differ"), "{sum}");
        assert!(sum.contains("1/1  approx cn"), "{sum}");
        assert!(sum.contains("1/1  ext sn:caseexactmatch"), "{sum}");
        assert!(t.any_difference());
        assert!(
            sum.contains("1  approx cn   e.g. (CN~=x) [seed 1 #4]"),
            "{sum}"
        );
    }

    #[test]
    fn deliberate_differences_must_differ() {
        let mut t = Tally::default();
        let mut marked = case("a.corpus:1", "(cn=x)");
        marked.deliberate = Some("docs/compatibility.md: x".into());
        let diff = Difference {
            kind: Kind::ExtraEntry,
            detail: "cn=x".into(),
        };
        assert!(t
            .record(&marked, std::slice::from_ref(&diff), &[])
            .is_none());
        assert!(!t.any_difference());
        let stale = t
            .record(&marked, &[], &[])
            .expect("an agreeing deliberate case is reported");
        assert!(stale.contains("both servers now agree"), "{stale}");
        assert!(t.any_difference());
        let sum = t.summary();
        assert!(
            sum.contains("[a.corpus:1] docs/compatibility.md: x"),
            "{sum}"
        );
        assert!(
            sum.ends_with("cases: 2, agree: 0, differ: 1, deliberate: 1\n"),
            "{sum}"
        );
    }

    #[test]
    fn dn_spelling_is_reported_apart() {
        let mut t = Tally::default();
        let form = Difference {
            kind: Kind::DnForm,
            detail: "slapd \"cn=A\", canopy \"CN=A\"".into(),
        };
        assert!(t
            .record(
                &case("a.corpus:1", "(cn=x)"),
                std::slice::from_ref(&form),
                &[]
            )
            .is_none());
        assert!(t
            .record(&case("a.corpus:2", "(cn=y)"), &[form], &[])
            .is_none());
        assert_eq!((t.cases, t.differ), (2, 0));
        assert!(t.any_difference());
        let sum = t.summary();
        assert!(sum.contains("(2 cases, first [a.corpus:1])"), "{sum}");
    }
}
