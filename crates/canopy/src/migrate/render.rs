//! Writing the model as Canopy's TOML: what was left out, the server-wide keys, each database.

use std::fmt::Write as _;

use super::{Database, LimitRule, Limits, Model, Val};

/// A TOML basic string.
pub(super) fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn val(v: &Val) -> String {
    match v {
        Val::Str(s) => q(s),
        Val::Int(n) => n.to_string(),
        Val::Bool(b) => b.to_string(),
        Val::List(items) => format!(
            "[{}]",
            items.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn comment_lines(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "#   {line}");
    }
}

impl Model {
    pub(super) fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# Canopy configuration written by `canopy migrate` (docs/migration.md).\n");
        out.push_str("# Check it with `canopy serve --check --config FILE` before serving.\n");
        if self.left_out.is_empty() {
            out.push_str("# Everything was translated.\n");
        } else {
            out.push_str("#\n# NOT TRANSLATED (review each):\n");
            for r in &self.left_out {
                let _ = writeln!(out, "# - {}: {}", r.origin, r.text.replace('\n', " "));
                comment_lines(&mut out, &format!("  {}", r.reason));
            }
        }
        if !self.notes.is_empty() {
            out.push_str("#\n# Carried over without a setting (no effect on answers):\n");
            for r in &self.notes {
                let _ = writeln!(
                    out,
                    "# - {}: {}: {}",
                    r.origin,
                    r.text.replace('\n', " "),
                    r.reason
                );
            }
        }
        out.push('\n');
        // slapd's config database has no password unless given one; its root DN is cn=config.
        if let Some(pw) = &self.config_root_pw {
            let dn = self
                .config_root_dn
                .as_ref()
                .map_or("cn=config", |(dn, _)| dn.as_str());
            let _ = writeln!(out, "config_root_dn = {}", q(dn));
            let _ = writeln!(out, "config_root_password = {}", q(pw));
        }
        let Some(first) = self.databases.first() else {
            out.push_str("# No `database mdb` section was found: Canopy's defaults apply.\n");
            return out;
        };
        let _ = writeln!(out, "# {}", first.origin);
        self.database_keys(&mut out, first, true);
        if !self.builtin_schema.is_empty() {
            let _ = writeln!(
                out,
                "builtin_schema = [{}]",
                self.builtin_schema
                    .iter()
                    .map(|s| q(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !self.schema_files.is_empty() {
            let _ = writeln!(
                out,
                "schema_files = [{}]",
                self.schema_files
                    .iter()
                    .map(|s| q(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some(h) = &self.password_hash {
            let _ = writeln!(out, "password_hash = {}", q(h));
        }
        if let Some(url) = &self.referral {
            let _ = writeln!(out, "referral = {}", q(url));
        }
        if !self.databases.is_empty() && self.databases.iter().all(|db| db.nosync) {
            out.push_str("durable = false\n");
        }
        let _ = writeln!(out, "monitor = {}", self.monitor);
        if self.monitor {
            access_list(
                &mut out,
                "monitor_access",
                &self.monitor_access,
                &self.frontend_access,
            );
        }
        if let Some(id) = self.server_id {
            let _ = writeln!(out, "server_id = {id}");
        }
        if self.databases.first().is_some_and(|db| db.multiprovider) {
            out.push_str("multiprovider = true\n");
        }
        // [limits]: the first database's, else the frontend's.
        let limits = self.effective_limits(first);
        let mut section = String::new();
        limit_keys(&mut section, &limits);
        // Connection settings at slapd's defaults are left to Canopy's (docs/limits.md).
        if let Some(n) = self.idle_timeout.filter(|n| *n != 0) {
            let _ = writeln!(section, "idle_timeout = {n}");
        }
        if let Some(n) = self.pdu_anonymous.filter(|n| *n != 262_143) {
            let _ = writeln!(section, "max_pdu_anonymous = {n}");
        }
        if let Some(n) = self.pdu_bound.filter(|n| *n != 16_777_215) {
            let _ = writeln!(section, "max_pdu_bound = {n}");
        }
        if let Some(n) = self.filter_depth {
            let _ = writeln!(section, "max_filter_depth = {}", n.min(1024));
        }
        if !section.is_empty() {
            out.push_str("\n[limits]\n");
            out.push_str(&section);
        }
        for rule in &limits.rules {
            rule_table(&mut out, "limits.rules", rule);
        }
        if self
            .tls
            .iter()
            .any(|(k, v)| *k != "verify_client" || v != "never")
        {
            out.push_str("\n[tls]\n");
            for (k, v) in &self.tls {
                let _ = writeln!(out, "{k} = {}", q(v));
            }
        }
        if self.authz_policy.is_some() || !self.sasl.is_empty() {
            out.push_str("\n[sasl]\n");
            if let Some(policy) = self.authz_policy {
                let _ = writeln!(out, "authz_policy = {}", q(policy));
            }
            for (k, v) in &self.sasl {
                let _ = writeln!(out, "{k} = {v}");
            }
        }
        for (pattern, replace) in &self.authz_regexp {
            let _ = writeln!(
                out,
                "\n[[sasl.authz_regexp]]\nmatch = {}\nreplace = {}",
                q(pattern),
                q(replace)
            );
        }
        database_tables(&mut out, first, "");
        let first_limits = limits;
        for db in &self.databases[1..] {
            let _ = writeln!(out, "\n# {}\n[[database]]", db.origin);
            self.database_keys(&mut out, db, false);
            let limits = self.effective_limits(db);
            let mut section = String::new();
            for (key, mine, theirs) in [
                ("size_limit", &limits.size, &first_limits.size),
                ("time_limit", &limits.time, &first_limits.time),
                (
                    "lookthrough_limit",
                    &limits.lookthrough,
                    &first_limits.lookthrough,
                ),
                (
                    "paged_size_limit",
                    &limits.paged_size,
                    &first_limits.paged_size,
                ),
                (
                    "paged_total_limit",
                    &limits.paged_total,
                    &first_limits.paged_total,
                ),
            ] {
                // slapd's defaults where neither says: 500 entries, 3600 s (Canopy's as well).
                let default = match key {
                    "size_limit" => Some(Val::Int(500)),
                    "time_limit" => Some(Val::Int(3600)),
                    "lookthrough_limit" | "paged_size_limit" => Some(Val::Int(0)),
                    _ => None,
                };
                let mine = mine.clone().or(default.clone());
                let theirs = theirs.clone().or(default);
                if mine != theirs {
                    match mine {
                        Some(v) => {
                            let _ = writeln!(section, "{key} = {}", val(&v));
                        }
                        None => {
                            let _ =
                                writeln!(section, "# {key}: as the size limit (slapd's default)");
                        }
                    }
                }
            }
            if !section.is_empty() || !limits.rules.is_empty() {
                out.push_str("[database.limits]\n");
                out.push_str(&section);
            }
            for rule in &limits.rules {
                rule_table(&mut out, "database.limits.rules", rule);
            }
            database_tables(&mut out, db, "database.");
        }
        out
    }

    /// A database's limits with the frontend's where it sets none (slapd's inheritance).
    fn effective_limits(&self, db: &Database) -> Limits {
        let f = &self.frontend_limits;
        let l = &db.limits;
        Limits {
            size: l.size.clone().or(f.size.clone()),
            time: l.time.clone().or(f.time.clone()),
            lookthrough: l.lookthrough.clone().or(f.lookthrough.clone()),
            paged_size: l.paged_size.clone().or(f.paged_size.clone()),
            paged_total: l.paged_total.clone().or(f.paged_total.clone()),
            rules: if l.rules.is_empty() {
                f.rules.clone()
            } else {
                l.rules.clone()
            },
        }
    }

    /// The keys of a database, plain (they precede its sub-tables).
    fn database_keys(&self, out: &mut String, db: &Database, first: bool) {
        if let Some(dir) = &db.directory {
            let _ = writeln!(
                out,
                "{} = {}",
                if first { "data_dir" } else { "directory" },
                q(dir)
            );
        }
        let _ = writeln!(
            out,
            "suffix = {}",
            q(db.suffix.as_deref().unwrap_or_default())
        );
        let _ = writeln!(
            out,
            "root_dn = {}",
            q(db.root_dn.as_deref().unwrap_or_default())
        );
        if let Some(pw) = &db.root_pw {
            let _ = writeln!(out, "root_password = {}", q(pw));
        }
        if db.read_only == Some(true) {
            out.push_str("read_only = true\n");
        }
        if !first {
            let _ = writeln!(out, "subordinate = {}", db.subordinate);
            if db.multiprovider {
                out.push_str("multiprovider = true\n");
            }
        }
        access_list(out, "access", &db.access, &self.frontend_access);
        for r in &db.dropped_access {
            let _ = writeln!(out, "# left out (see the top of this file): {r}");
        }
        if !db.indexes.is_empty() {
            out.push_str("indexes = [\n");
            for (attr, kinds) in &db.indexes {
                let _ = writeln!(
                    out,
                    "  {{ attr = {}, kinds = [{}] }},",
                    q(attr),
                    kinds.iter().map(|k| q(k)).collect::<Vec<_>>().join(", ")
                );
            }
            out.push_str("]\n");
        }
        if let Some(url) = &db.updateref {
            let _ = writeln!(out, "updateref = {}", q(url));
        }
    }
}

/// `key = [...]`: a database's own rules, then the frontend's, as slapd appends them to each
/// database's; with none at all slapd lets everyone read everything (Canopy's default list would
/// hide userPassword).
fn access_list(out: &mut String, key: &str, own: &[String], frontend: &[String]) {
    let default_rule = "to * by * read".to_string();
    let mut rules: Vec<&String> = own.iter().chain(frontend).collect();
    if rules.is_empty() {
        rules.push(&default_rule);
    }
    let _ = writeln!(out, "{key} = [");
    for r in rules {
        let _ = writeln!(out, "  {},", q(r));
    }
    out.push_str("]\n");
}

fn limit_keys(out: &mut String, limits: &Limits) {
    // slapd's defaults, which are Canopy's too, are left out.
    let size = limits.size.clone().filter(|v| *v != Val::Int(500));
    let time = limits.time.clone().filter(|v| *v != Val::Int(3600));
    for (key, v) in [
        ("size_limit", &size),
        ("time_limit", &time),
        ("lookthrough_limit", &limits.lookthrough),
        ("paged_size_limit", &limits.paged_size),
        ("paged_total_limit", &limits.paged_total),
    ] {
        if let Some(v) = v {
            let _ = writeln!(out, "{key} = {}", val(v));
        }
    }
}

fn rule_table(out: &mut String, table: &str, rule: &LimitRule) {
    let _ = writeln!(out, "\n[[{table}]]\nwho = {}", q(&rule.who));
    for (k, v) in &rule.values {
        let _ = writeln!(out, "{k} = {}", val(v));
    }
}

/// A database's overlay and syncrepl tables (`prefix` is `database.` inside a `[[database]]`).
fn database_tables(out: &mut String, db: &Database, prefix: &str) {
    for o in &db.overlays {
        let _ = writeln!(out, "\n[[{prefix}overlay]]\nname = {}", q(&o.name));
        for (k, v) in &o.options {
            let _ = writeln!(out, "{k} = {}", val(v));
        }
    }
    for table in &db.syncrepl {
        let _ = writeln!(out, "\n[[{prefix}syncrepl]]");
        for (k, v) in table {
            let _ = writeln!(out, "{k} = {}", val(v));
        }
    }
}
