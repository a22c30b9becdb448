//! `canopy acl-check`: explains one access decision offline (like slapacl), from the configured rules and
//! the entries of the database.

use anyhow::{anyhow, bail, Context, Result};
use canopy_directory::{dn_key, Directory};
use canopy_proto::Dn;
use canopy_server::access::Who;
use canopy_server::acl::GroupReader;
use canopy_server::acl::{
    parse_access, privileges, AttrRef, Checker, Decision, Modifier, SetClause, Target, WhoSpec,
};
use canopy_server::databases::Database;
use canopy_server::session::{Link, Peer, TlsFacts};
use canopy_server::Config;

use canopy_mdb::ReadOps;

/// What to check: who asks, about which entry and attribute, for which level (the `acl-check` arguments).
#[derive(clap::Args)]
pub struct Question {
    /// The requester's DN; empty or "anonymous" for an anonymous client.
    #[arg(long = "as", default_value = "")]
    pub as_dn: String,
    /// The entry the access is to.
    #[arg(long)]
    pub entry: String,
    /// The attribute, or `entry` / `children` (default: entry).
    #[arg(long)]
    pub attr: Option<String>,
    /// The level or =privileges to check.
    #[arg(long, default_value = "read")]
    pub level: String,
    /// The client's IP address, for peername.ip clauses (none: an offline identity with no link).
    #[arg(long)]
    pub peer: Option<std::net::IpAddr>,
    /// The client comes over ldapi:// (ssf 71, peername.path).
    #[arg(long)]
    pub ldapi: bool,
    /// The client's link is TLS-protected (ssf 256).
    #[arg(long)]
    pub tls: bool,
}

/// Prints the decision; returns whether the level is granted.
pub fn acl_check(config: &Config, question: &Question) -> Result<bool> {
    let (modifier, need) = parse_access(&question.level)
        .ok_or_else(|| anyhow!("--level {:?}: not an access level", question.level))?;
    if modifier != Modifier::Set {
        bail!("--level {:?}: give a level or =privileges", question.level);
    }
    let dir = canopy_server::open_directory(config, false)?;
    let schema = dir.schema().clone();
    let normalize = |text: &str| -> Result<canopy_schema::NormDn> {
        let dn = Dn::parse(text.as_bytes()).map_err(|e| anyhow!("{text:?}: {e}"))?;
        schema
            .normalize_dn(&dn)
            .map_err(|e| anyhow!("{text:?}: {e}"))
    };
    let who = requester(config, question, &normalize)?;
    let ndn = normalize(&question.entry)?;
    let txn = dir.store().read()?;
    let id = txn
        .get_id(&dn_key(&ndn))?
        .ok_or_else(|| anyhow!("no entry {:?} in the database", question.entry))?;
    let bytes = txn
        .get_entry(id)?
        .ok_or_else(|| anyhow!("entry {:?} is missing from id2entry", question.entry))?;
    let entry = Directory::parse_stored(bytes)
        .map_err(|e| anyhow!("{}", e.message))?
        .to_entry()
        .context("the stored entry is unreadable")?;
    let attr = match question.attr.as_deref() {
        None => AttrRef::Entry,
        Some(a) if a.eq_ignore_ascii_case("entry") => AttrRef::Entry,
        Some(a) if a.eq_ignore_ascii_case("children") => AttrRef::Children,
        Some(a) => {
            if schema
                .attribute_type(a.split(';').next().unwrap_or(a))
                .is_none()
            {
                bail!("--attr {a:?}: no such attribute type");
            }
            AttrRef::Attr(a)
        }
    };
    let groups = GroupReader {
        dir: &dir,
        txn: &txn,
    };
    let checker = dir.acl().checker(&schema, &who, &groups);
    let target = Target {
        ndn: &ndn,
        entry: Some(&entry),
    };
    let decision = checker.explain(target, attr);
    explain(&dir, question, &who, &decision);
    explain_relation(&dir, &checker, target, &decision);
    let granted = decision.mask & need == need;
    println!(
        "{} access to {}: {}",
        question.level,
        question.attr.as_deref().unwrap_or("entry"),
        if granted { "ALLOWED" } else { "DENIED" }
    );
    Ok(granted)
}

fn requester(
    config: &Config,
    question: &Question,
    normalize: &dyn Fn(&str) -> Result<canopy_schema::NormDn>,
) -> Result<Who> {
    let peer = match (question.ldapi, question.peer) {
        (true, _) => Some(Peer::Unix { uid: 0, gid: 0 }),
        (false, Some(ip)) => Some(Peer::Tcp(std::net::SocketAddr::new(ip, 0))),
        (false, None) => None,
    };
    let link = Link {
        peer,
        tls: question.tls.then(TlsFacts::default),
        sasl_ssf: 0,
    };
    if question.as_dn.is_empty() || question.as_dn.eq_ignore_ascii_case("anonymous") {
        return Ok(Who {
            link,
            ..Who::anonymous()
        });
    }
    let ndn = normalize(&question.as_dn)?;
    let root = normalize(&config.root_dn).is_ok_and(|r| r == ndn);
    Ok(Who {
        dn: question.as_dn.clone(),
        ndn: Some(ndn),
        root,
        link,
        // Offline there is no proxied authorization: the `real...` forms test this identity too.
        real: None,
    })
}

/// What the entry-dependent `<who>` clauses (`dnattr=`, `realself`) of the rules that applied saw,
/// matched or not, and which identity the `real...` forms tested.
fn explain_relation(
    dir: &Database,
    checker: &Checker<'_>,
    target: Target<'_>,
    decision: &Decision,
) {
    let relation = checker.relation(target);
    let rules = dir.acl().rules();
    let mut reached: Vec<usize> = decision.steps.iter().map(|(rule, _)| *rule).collect();
    reached.extend(decision.rule);
    reached.dedup();
    let applied = reached
        .iter()
        .filter_map(|r| Some((*r, rules.get(*r)?)))
        .flat_map(|(r, rule)| rule.bys.iter().map(move |by| (r, by)));
    let mut shown = Vec::new();
    for (rule, by) in applied {
        for who in &by.who {
            let line = match who.unreal() {
                WhoSpec::DnExpand(expanding) => {
                    match checker.expanded_text(rule, who, target.ndn) {
                        Some(text) => format!(
                            "{}: the $N references filled in for this entry give {text:?}",
                            expanding.pattern
                        ),
                        None => continue,
                    }
                }
                WhoSpec::SelfEntry if matches!(who, WhoSpec::Real(_)) => format!(
                    "self: the requester {} the entry",
                    if relation.real_is_self {
                        "is"
                    } else {
                        "is not"
                    }
                ),
                WhoSpec::Set(set) => explain_set(checker, rule, set, target),
                WhoSpec::DnAttr(attr) => {
                    let bit = dir.acl().dnattrs().iter().position(|a| a == attr);
                    let bits = match who {
                        WhoSpec::Real(_) => relation.real_dnattrs,
                        _ => relation.dnattrs,
                    };
                    let holds = bit.is_some_and(|b| bits & (1 << b) != 0);
                    format!(
                        "dnattr={attr}: the requester's DN {} a value of {attr} in the entry",
                        if holds { "is" } else { "is not" }
                    )
                }
                _ => continue,
            };
            if matches!(who, WhoSpec::Real(_)) {
                shown.push(format!(
                    "{line} (real: the bound identity, which offline is the requester: no proxied authorization)"
                ));
            } else {
                shown.push(line);
            }
        }
    }
    let mut seen = Vec::new();
    shown.retain(|line| {
        let new = !seen.contains(line);
        seen.push(line.clone());
        new
    });
    for line in shown {
        println!("  {line}");
    }
}

/// What a `set=` clause gave for this entry and requester: its elements (a few), or why it gave up.
fn explain_set(checker: &Checker<'_>, rule: usize, set: &SetClause, target: Target<'_>) -> String {
    let style = if set.expand { "set.expand" } else { "set" };
    match checker.evaluate_set(rule, set, target) {
        None => format!(
            "{style}={:?}: the rule's DN pattern does not match the entry",
            set.text
        ),
        Some(Err(failure)) => format!(
            "{style}={:?}: gave up ({failure}), so it does not match",
            set.text
        ),
        Some(Ok(result)) if result.is_empty() => {
            format!(
                "{style}={:?}: the set is empty, so it does not match",
                set.text
            )
        }
        Some(Ok(result)) => {
            const SHOWN: usize = 5;
            let mut elements: Vec<String> = result
                .iter()
                .take(SHOWN)
                .map(|v| format!("{:?}", String::from_utf8_lossy(v)))
                .collect();
            if result.len() > SHOWN {
                elements.push(format!("and {} more", result.len() - SHOWN));
            }
            format!(
                "{style}={:?}: the set holds {} element(s) ({}), so it matches",
                set.text,
                result.len(),
                elements.join(", ")
            )
        }
    }
}

fn explain(dir: &Database, question: &Question, who: &Who, decision: &Decision) {
    let asking = if who.ndn.is_none() {
        "anonymous".to_string()
    } else {
        who.dn.clone()
    };
    println!("requester: {asking}");
    println!("entry: {}", question.entry);
    println!("attribute: {}", question.attr.as_deref().unwrap_or("entry"));
    if decision.root {
        println!("decided by: the root DN (rootdn bypasses access control)");
    }
    let rules = dir.acl().rules();
    for (rule, by) in &decision.steps {
        if let (Some(r), Some(b)) = (
            rules.get(*rule),
            rules.get(*rule).and_then(|r| r.bys.get(*by)),
        ) {
            println!("rule {rule}: to {}", r.what_text);
            println!("  what matched: {}", r.what_text);
            println!("  by clause {by} matched: by {}", b.text);
        }
    }
    match (decision.rule, decision.by) {
        (None, _) if !decision.root => {
            println!("decided by: no rule matched (implicit none)");
        }
        (Some(rule), None) => {
            let what = rules.get(rule).map(|r| r.what_text.as_str()).unwrap_or("");
            println!(
                "decided by: rule {rule} (to {what}), no by clause matched (implicit by * none)"
            );
        }
        (Some(rule), Some(by)) => println!("decided by: rule {rule}, by clause {by}"),
        _ => {}
    }
    println!("granted: {}", privileges::describe(decision.mask));
}
