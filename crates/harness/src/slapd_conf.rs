//! The slapd.conf that makes Debian's slapd the reference: same suffix, schema, indexes and access
//! rules as canopy's defaults, with back-mdb in the server's scratch directory.

use crate::server::{ROOT_DN, ROOT_PW, SUFFIX};
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

#[cfg(test)]
mod tests {
    use super::*;

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
