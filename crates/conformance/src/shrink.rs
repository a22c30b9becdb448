//! Narrows a differing search down to its cause: each leaf of the filter is tried on its own and
//! negated (negation exposes Undefined-versus-FALSE disagreements), with the same base, scope and
//! identity, and the leaves on which the servers still disagree are reported as culprits.

use crate::case::{Case, Request};
use crate::compare::{diff, Kind};
use crate::servers::Endpoint;
use canopy_proto::Filter;

/// Leaves tried per case at most (a depth-4 filter has a few dozen at worst).
const MAX_LEAVES: usize = 24;

/// The distinct leaf filters of `f`, in order of appearance.
pub fn leaves(f: &Filter) -> Vec<Filter> {
    let mut out: Vec<Filter> = Vec::new();
    collect(f, &mut out);
    out
}

fn collect(f: &Filter, out: &mut Vec<Filter>) {
    match f {
        Filter::And(list) | Filter::Or(list) => list.iter().for_each(|g| collect(g, out)),
        Filter::Not(inner) => collect(inner, out),
        leaf => {
            if !out.contains(leaf) {
                out.push(leaf.clone());
            }
        }
    }
}

/// The leaves (or negated leaves) of a search case's filter on which slapd and canopy disagree
/// about the matching entries or the result code. Empty when the case is not a search, or when
/// only the combination differs.
pub fn culprits(case: &Case, slapd: &mut Endpoint, canopy: &mut Endpoint) -> Vec<Filter> {
    let Request::Search(req) = &case.request else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for leaf in leaves(&req.filter).into_iter().take(MAX_LEAVES) {
        for probe in [leaf.clone(), Filter::Not(Box::new(leaf.clone()))] {
            let mut r = req.clone();
            r.filter = probe.clone();
            r.attributes = vec!["1.1".into()];
            r.size_limit = 0;
            let probe_case = Case {
                origin: format!("{} probe", case.origin),
                identity: case.identity.clone(),
                request: Request::Search(r),
                controls: case.controls.clone(),
                deliberate: None,
            };
            let differs = diff(&slapd.run(&probe_case), &canopy.run(&probe_case))
                .iter()
                .any(|d| d.kind != Kind::DnForm);
            if differs {
                found.push(probe);
                break;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_distinct_and_ordered() {
        let f = Filter::parse("(&(a=1)(|(b=2)(!(a=1)))(!(&(c=*))))").unwrap();
        let got: Vec<String> = leaves(&f).iter().map(|l| l.to_string()).collect();
        assert_eq!(got, vec!["(a=1)", "(b=2)", "(c=*)"]);
        assert_eq!(leaves(&Filter::parse("(&)").unwrap()), vec![]);
    }
}
