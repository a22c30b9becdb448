//! The slapd.conf that makes Debian's slapd the reference: same suffix, schema, indexes and access
//! rules as canopy's defaults, with back-mdb in the server's scratch directory.

use crate::base::{ROOT_DN, ROOT_PW, SUFFIX};
use std::path::{Path, PathBuf};

/// Indexes as (attribute, kinds): canopy's defaults, docs/configuration.md. Indexes change only
/// speed, never results; they are mirrored so that both servers do the same work.
pub const INDEXES: &[(&str, &str)] = &[
    ("objectClass", "eq"),
    ("uid", "eq,sub"),
    ("cn", "eq,sub"),
    ("sn", "eq,sub"),
    ("mail", "eq,sub"),
    ("member", "eq"),
    ("memberUid", "eq"),
    ("uidNumber", "eq"),
    ("gidNumber", "eq"),
    ("entryUUID", "eq"),
    ("entryCSN", "eq"),
];

/// Renders slapd.conf for a server whose files live in `dir` and database in `data`.
pub fn render(dir: &Path, data: &Path) -> String {
    render_with_schema(dir, data, &[])
}

/// `render`, with `extra` schema files included after the standard ones (as canopy loads
/// `schema_files` after its built-in schema).
pub fn render_with_schema(dir: &Path, data: &Path, extra: &[PathBuf]) -> String {
    render_full(dir, data, extra, &DEBIAN_ACCESS, "")
}

/// `render`, with `overlays` (slapd.conf lines: `overlay NAME` and its options) at the end of the
/// main database's section, and the module of every overlay named there loaded.
pub fn render_with_overlays(dir: &Path, data: &Path, overlays: &str) -> String {
    render_full(dir, data, &[], &DEBIAN_ACCESS, overlays)
}

/// `render`, with `extra` schema files, `access` rules in place of Debian's and `overlays` lines,
/// all at once (see the three functions above).
pub fn render_with_all(
    dir: &Path,
    data: &Path,
    extra: &[PathBuf],
    access: &[&str],
    overlays: &str,
) -> String {
    render_full(dir, data, extra, access, overlays)
}

/// `render`, with `globals` (slapd.conf lines such as `authz-policy to`) in the global section,
/// before the first database, and `access` in place of Debian's rules (empty: Debian's).
pub fn render_with_globals(dir: &Path, data: &Path, globals: &str, access: &[&str]) -> String {
    let access = if access.is_empty() {
        &DEBIAN_ACCESS[..]
    } else {
        access
    };
    render_full(dir, data, &[], access, "").replacen(
        "\ndatabase mdb\n",
        &format!("\n{globals}\ndatabase mdb\n"),
        1,
    )
}

/// Debian's default rules for the main database, which canopy's default list reproduces.
pub const DEBIAN_ACCESS: [&str; 2] = [
    "to attrs=userPassword by self write by anonymous auth by * none",
    "to * by * read",
];

/// `render`, with `access` (rules without the leading `access`) in place of Debian's default rules.
pub fn render_with_access(dir: &Path, data: &Path, access: &[&str]) -> String {
    render_full(dir, data, &[], access, "")
}

fn render_full(
    dir: &Path,
    data: &Path,
    extra: &[PathBuf],
    access: &[&str],
    overlays: &str,
) -> String {
    let modules: String = overlays
        .lines()
        .filter_map(|line| line.trim().strip_prefix("overlay "))
        .map(|name| format!("moduleload {}\n", name.trim()))
        .collect();
    let standard = ["core", "cosine", "inetorgperson", "nis"]
        .iter()
        .map(|s| PathBuf::from(format!("/etc/ldap/schema/{s}.schema")));
    let schema: String = standard
        .chain(extra.iter().cloned())
        .map(|s| format!("include {}\n", s.display()))
        .collect();
    let access: String = access
        .iter()
        .map(|rule| {
            format!(
                "access {}\n",
                rule.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    let indexes: String = INDEXES
        .iter()
        .map(|(attr, kinds)| format!("index {attr} {kinds}\n"))
        .collect();
    format!(
        "{schema}\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         # Password schemes beyond slapd's built-in ones ({{SSHA}}, {{SHA}}, {{CRYPT}}, cleartext).\n\
         moduleload pw-sha2\n\
         moduleload argon2\n\
         moduleload pw-pbkdf2\n\
         {modules}\
         pidfile {dir}/slapd.pid\n\
         argsfile {dir}/slapd.args\n\
         # SASL user names map to entries as canopy maps them without rules: the entry whose uid is\n\
         # the name (docs/authentication.md).\n\
         authz-regexp \"uid=([^,]*),cn=[^,]*,cn=auth\" \"ldap:///{SUFFIX}??sub?(uid=$1)\"\n\
         \n\
         # Frontend: the root DSE and the subschema entry are public.\n\
         access to dn.exact=\"\" by * read\n\
         access to dn.exact=\"cn=Subschema\" by * read\n\
         \n\
         database mdb\n\
         suffix \"{SUFFIX}\"\n\
         rootdn \"{ROOT_DN}\"\n\
         rootpw {ROOT_PW}\n\
         directory {data}\n\
         # back-mdb's default map is 10 MiB, too small for the bulk tests; canopy grows its map.\n\
         maxsize 1073741824\n\
         {indexes}\
         # The main database's access rules (Debian's by default).\n\
         {access}\
         {overlays}",
        dir = dir.display(),
        data = data.display(),
    )
}

/// A database besides the main one (`dc=example,dc=com`), rendered alike for both servers: a
/// `database mdb` section of slapd.conf and a `[[database]]` table of canopy's configuration.
#[derive(Debug, Clone, Default)]
pub struct ExtraDatabase {
    pub suffix: String,
    /// The root DN; slapd accepts a root password only for a root DN inside the suffix.
    pub root_dn: Option<String>,
    pub root_pw: Option<String>,
    /// Access rules (without the leading `access`); empty: Debian's default list.
    pub access: Vec<String>,
    /// `Some(true)`: glued into the database whose suffix holds this one (slapd's `subordinate`);
    /// `Some(false)`: inside it but kept apart; None: a naming context of its own.
    pub subordinate: Option<bool>,
    /// slapd's `readonly on`, canopy's `read_only = true`.
    pub read_only: bool,
    /// slapd's per-database `sizelimit`, canopy's `[database.limits] size_limit`.
    pub size_limit: Option<u32>,
    /// This database's overlays: slapd.conf lines (`overlay NAME` and its options; the modules are
    /// loaded) and canopy's `[[database.overlay]]` tables.
    pub overlays: (String, String),
}

impl ExtraDatabase {
    /// The directory of database `number` (2, 3, ...) under the main data directory: canopy's default
    /// `DATA/db<N>`, which slapd is given too.
    pub fn directory(data: &Path, number: usize) -> PathBuf {
        data.join(format!("db{number}"))
    }

    fn access_rules(&self) -> Vec<String> {
        if self.access.is_empty() {
            DEBIAN_ACCESS.iter().map(|r| r.to_string()).collect()
        } else {
            self.access.clone()
        }
    }

    /// The slapd.conf section of database `number`.
    fn slapd_section(&self, data: &Path, number: usize) -> String {
        let mut out = format!("\ndatabase mdb\nsuffix \"{}\"\n", self.suffix);
        if self.subordinate == Some(true) {
            out.push_str("subordinate\n");
        }
        if let Some(root) = &self.root_dn {
            out.push_str(&format!("rootdn \"{root}\"\n"));
        }
        if let Some(pw) = &self.root_pw {
            out.push_str(&format!("rootpw {pw}\n"));
        }
        out.push_str(&format!(
            "directory {}\nmaxsize 1073741824\n",
            Self::directory(data, number).display()
        ));
        for (attr, kinds) in INDEXES {
            out.push_str(&format!("index {attr} {kinds}\n"));
        }
        if self.read_only {
            out.push_str("readonly on\n");
        }
        if let Some(size) = self.size_limit {
            out.push_str(&format!("sizelimit {size}\n"));
        }
        for rule in self.access_rules() {
            let rule = rule.split_whitespace().collect::<Vec<_>>().join(" ");
            out.push_str(&format!("access {rule}\n"));
        }
        out.push_str(&self.overlays.0);
        out
    }

    /// The `[[database]]` table of canopy's configuration.
    pub fn canopy_table(&self) -> String {
        let mut out = format!("\n[[database]]\nsuffix = {:?}\n", self.suffix);
        if let Some(root) = &self.root_dn {
            out.push_str(&format!("root_dn = {root:?}\n"));
        }
        if let Some(pw) = &self.root_pw {
            out.push_str(&format!("root_password = {pw:?}\n"));
        }
        if let Some(sub) = self.subordinate {
            out.push_str(&format!("subordinate = {sub}\n"));
        }
        if self.read_only {
            out.push_str("read_only = true\n");
        }
        let rules: Vec<String> = self
            .access_rules()
            .iter()
            .map(|r| format!("'''{r}'''"))
            .collect();
        out.push_str(&format!("access = [\n{}\n]\n", rules.join(",\n")));
        if let Some(size) = self.size_limit {
            out.push_str(&format!("[database.limits]\nsize_limit = {size}\n"));
        }
        out.push_str(&self.overlays.1);
        out
    }
}

/// `render` with `extra` databases, numbered 2, 3, ... as canopy numbers its `[[database]]` tables.
/// slapd picks the first database whose suffix holds a DN, so the databases inside another one
/// (`subordinate` set) are written before the main one, the others after it.
pub fn render_with_databases(dir: &Path, data: &Path, extra: &[ExtraDatabase]) -> String {
    let modules: String = extra
        .iter()
        .flat_map(|db| db.overlays.0.lines())
        .filter_map(|line| line.trim().strip_prefix("overlay "))
        .map(|name| format!("moduleload {}\n", name.trim()))
        .collect();
    let main = render(dir, data).replacen(
        "moduleload back_mdb\n",
        &format!("moduleload back_mdb\n{modules}"),
        1,
    );
    let (head, tail) = main
        .split_once("\ndatabase mdb\n")
        .expect("the main database section");
    let mut before = String::new();
    let mut after = String::new();
    for (i, db) in extra.iter().enumerate() {
        let section = db.slapd_section(data, i + 2);
        match db.subordinate {
            Some(_) => before.push_str(&section),
            None => after.push_str(&section),
        }
    }
    format!("{head}{before}\ndatabase mdb\n{tail}{after}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_inside_the_main_one_come_first() {
        let extra = [
            ExtraDatabase {
                suffix: "dc=other".into(),
                root_dn: Some("cn=boss,dc=other".into()),
                root_pw: Some("pw".into()),
                read_only: true,
                size_limit: Some(2),
                overlays: ("overlay memberof\n".into(), String::new()),
                ..Default::default()
            },
            ExtraDatabase {
                suffix: "ou=sub,dc=example,dc=com".into(),
                subordinate: Some(true),
                ..Default::default()
            },
        ];
        let conf = render_with_databases(Path::new("/t"), Path::new("/t/data"), &extra);
        let at = |needle: &str| {
            conf.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} in\n{conf}"))
        };
        assert!(
            at("suffix \"ou=sub,dc=example,dc=com\"\nsubordinate\n")
                < at("suffix \"dc=example,dc=com\"")
        );
        assert!(at("suffix \"dc=example,dc=com\"") < at("suffix \"dc=other\""));
        for needle in [
            "directory /t/data/db2\n",
            "directory /t/data/db3\n",
            "readonly on\nsizelimit 2\n",
            "rootpw pw\n",
            "moduleload memberof\n",
        ] {
            at(needle);
        }
        let toml = extra[0].canopy_table();
        assert!(
            toml.contains("read_only = true\n")
                && toml.contains("[database.limits]\nsize_limit = 2\n"),
            "{toml}"
        );
        assert!(extra[1].canopy_table().contains("subordinate = true\n"));
    }

    #[test]
    fn renders_paths_and_rules() {
        let conf = render(Path::new("/t"), Path::new("/t/data"));
        for needle in [
            "directory /t/data\n",
            "pidfile /t/slapd.pid\n",
            "suffix \"dc=example,dc=com\"\n",
            "index entryCSN eq\n",
            "index mail eq,sub\n",
            "access to attrs=userPassword by self write by anonymous auth by * none\n",
            "include /etc/ldap/schema/nis.schema\n",
        ] {
            assert!(conf.contains(needle), "missing {needle:?} in\n{conf}");
        }
    }
}
