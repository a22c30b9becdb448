//! Search limits: `limits` rules and `sizelimit` / `timelimit`, of a database or the frontend.

use super::{Directive, LimitRule, Model, Val};

/// A slapd limit value: a number, `unlimited` (or `none`), or `disabled`.
fn limit_value(word: &str) -> Option<Val> {
    match word.to_ascii_lowercase().as_str() {
        "unlimited" | "none" => Some(Val::Str("unlimited".into())),
        "disabled" => Some(Val::Str("disabled".into())),
        _ => word.parse::<i64>().ok().filter(|n| *n >= 0).map(Val::Int),
    }
}

/// `limits <who> <limit>...` → a `[[limits.rules]]` table.
pub(super) fn limits(m: &mut Model, d: &Directive, db: Option<usize>) {
    let Some((who, specs)) = d.args.split_first() else {
        return m.leave(d, "expected `limits <who> <limit>...`");
    };
    let who_lower = who.to_ascii_lowercase();
    let canopy_who = match who_lower.as_str() {
        "anonymous" | "users" | "*" => Some(who_lower.clone()),
        _ => match who.split_once('=') {
            Some((style, dn)) => match style.to_ascii_lowercase().as_str() {
                "dn" | "dn.exact" | "dn.base" | "dn.baseobject" => Some(format!("dn.exact:{dn}")),
                "dn.sub" | "dn.subtree" => Some(format!("dn.subtree:{dn}")),
                "group" | "group/groupofnames" | "group/groupofnames/member" => {
                    Some(format!("group:{dn}"))
                }
                _ => None,
            },
            None => None,
        },
    };
    let Some(canopy_who) = canopy_who else {
        return m.leave(d, "Canopy's limit rules name anonymous, users, *, dn.exact, dn.subtree or group (groupOfNames/member)");
    };
    let mut rule = LimitRule {
        who: canopy_who,
        values: Vec::new(),
    };
    for spec in specs {
        let Some((kind, value)) = spec.split_once('=') else {
            return m.leave(d, format!("`{spec}`: expected KIND=VALUE"));
        };
        let key = match kind.to_ascii_lowercase().as_str() {
            "size" | "size.soft" | "size.hard" => "size",
            "time" | "time.soft" | "time.hard" => "time",
            "size.unchecked" => "lookthrough",
            "size.pr" => "paged_size",
            "size.prtotal" => "paged_total",
            other => return m.leave(d, format!("`{other}` limits have no counterpart in Canopy")),
        };
        let Some(v) = limit_value(value) else {
            return m.leave(
                d,
                format!("`{spec}`: expected a number, unlimited or disabled"),
            );
        };
        if kind.ends_with(".hard") && rule.values.iter().any(|(k, _)| *k == key) {
            // soft given first: Canopy has one value per limit, the soft one (what a client gets
            // without asking); a client may ask for less.
            m.note(d, format!("`{kind}`: Canopy has one value per limit (the soft one); clients may ask for less, not more"));
            continue;
        }
        if let Some(have) = rule.values.iter_mut().find(|(k, _)| *k == key) {
            if !kind.ends_with(".hard") {
                have.1 = v;
            }
            continue;
        }
        rule.values.push((key, v));
    }
    match db {
        Some(i) => m.databases[i].limits.rules.push(rule),
        None => m.frontend_limits.rules.push(rule),
    }
}

/// `sizelimit N` / `timelimit N`, or their `size.soft=N ...` forms.
pub(super) fn search_limit(m: &mut Model, d: &Directive, name: &str, db: Option<usize>) {
    let mut limits = match db {
        Some(i) => m.databases[i].limits.clone(),
        None => m.frontend_limits.clone(),
    };
    for spec in &d.args {
        let (kind, value) = match spec.split_once('=') {
            Some((k, v)) => (k.to_ascii_lowercase(), v),
            None => (name.trim_end_matches("limit").to_string(), spec.as_str()),
        };
        let Some(v) = limit_value(value) else {
            return m.leave(d, format!("`{spec}`: expected a number or unlimited"));
        };
        let v = match v {
            Val::Str(s) if s == "unlimited" => Val::Int(0),
            other => other,
        };
        match kind.as_str() {
            "size" | "size.soft" => limits.size = Some(v),
            "time" | "time.soft" => limits.time = Some(v),
            "size.hard" | "time.hard" => {
                m.note(d, "Canopy has one value per limit (the soft one)");
            }
            "size.unchecked" => limits.lookthrough = Some(v),
            "size.pr" => limits.paged_size = Some(v),
            "size.prtotal" => limits.paged_total = Some(v),
            other => return m.leave(d, format!("`{other}` has no counterpart in Canopy")),
        }
    }
    match db {
        Some(i) => m.databases[i].limits = limits,
        None => m.frontend_limits = limits,
    }
}
