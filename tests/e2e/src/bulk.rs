//! A generated directory of a few thousand entries for the tests that need volume: abandon,
//! back-pressure, server-side size limits and unindexed searches over many candidates.

use crate::{Server, SUFFIX};

/// How many entries `load_bulk` adds: well above the default size limit of 500 and large enough
/// that a search of all of them is still running when a client reacts.
pub const BULK: usize = 3000;

/// The parent of the generated entries.
pub fn bulk_base() -> String {
    format!("ou=bulk,{SUFFIX}")
}

/// Every `MARK_EVERY`-th entry has "xylophone" in its description (the rest of the text has no
/// `x`), so `(description=*x*)` matches exactly `n / MARK_EVERY` generated entries.
pub const MARK_EVERY: usize = 100;

/// LDIF for `ou=bulk` and `n` inetOrgPerson entries below it, each about 1 KiB so that a search
/// of all of them is megabytes on the wire.
pub fn bulk_ldif(n: usize) -> String {
    let base = bulk_base();
    let padding = "lorem ipsum dolor sit amet consectetur adipiscing elit ".repeat(16);
    let mut out = format!("dn: {base}\nobjectClass: organizationalUnit\nou: bulk\n\n");
    for i in 1..=n {
        let mark = if i % MARK_EVERY == 0 {
            " xylophone"
        } else {
            ""
        };
        out.push_str(&format!(
            "dn: uid=bulk{i:05},{base}\nobjectClass: inetOrgPerson\nuid: bulk{i:05}\n\
             cn: Bulk User {i}\nsn: User{i:05}\nmail: bulk{i:05}@example.com\n\
             description: generated entry {i}{mark}\npostalAddress: {padding}\n\n"
        ));
    }
    out
}

/// Loading the bulk data set into a [`Server`].
pub trait Bulk: Sized {
    /// Adds `bulk_ldif(n)` with ldapadd as the root DN; panics when that fails.
    fn load_bulk(&self, n: usize);

    /// Starts the target chosen by the environment on base.ldif plus `bulk_ldif(n)`, loaded with
    /// the offline import: adding thousands of entries one durable commit at a time through
    /// ldapadd takes longer than the whole suite may (26 s for 3000 on the 2-core machine).
    fn start_bulk(n: usize) -> Self;
}

impl Bulk for Server {
    fn load_bulk(&self, n: usize) {
        let path = self.dir().join("bulk.ldif");
        std::fs::write(&path, bulk_ldif(n)).unwrap();
        let out = self.tool(
            "ldapadd",
            &crate::Bind::Root,
            &["-f", &path.to_string_lossy()],
            None,
        );
        assert_eq!(
            out.code,
            0,
            "loading {n} generated entries failed: {}\nserver log:\n{}",
            out.stderr,
            self.log()
        );
    }

    fn start_bulk(n: usize) -> Server {
        let scratch = crate::tempdir::TempDir::new("bulk-ldif");
        let base = std::fs::read_to_string(crate::base_ldif()).unwrap();
        let path = scratch.path().join("all.ldif");
        std::fs::write(&path, format!("{base}\n\n{}", bulk_ldif(n))).unwrap();
        Server::start_imported(&path)
    }
}
