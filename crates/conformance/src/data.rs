//! The loaded test data as the random generator sees it: entry DNs, attribute names, and
//! (attribute, value) pairs to build assertions from.

use canopy_proto::{LdifReader, LdifRecord};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
}

#[derive(Debug, Clone)]
pub struct PoolEntry {
    pub dn: Vec<u8>,
}

/// What the generator draws from. Vectors, not maps, so picks are deterministic and uniform.
#[derive(Debug, Clone, Default)]
pub struct Pool {
    pub entries: Vec<PoolEntry>,
    /// Every attribute type used in the data, lower-cased, sorted.
    pub attr_names: Vec<String>,
    /// Every (lower-cased attribute type, value) pair, in file order; userPassword excluded
    /// (hashes make poor assertions and ACLs hide them).
    pub pairs: Vec<(String, Vec<u8>)>,
}

impl Pool {
    pub fn from_ldif(text: &[u8]) -> Result<Pool, String> {
        let mut pool = Pool::default();
        pool.add_ldif(text)?;
        Ok(pool)
    }

    fn add_ldif(&mut self, text: &[u8]) -> Result<(), String> {
        let mut names: BTreeSet<String> = self.attr_names.iter().cloned().collect();
        for record in LdifReader::new(text) {
            let (dn, attrs) = match record.map_err(|e| e.to_string())? {
                LdifRecord::Content { dn, attrs } => (dn, attrs),
                LdifRecord::Change { .. } => return Err("change records in data LDIF".into()),
            };
            self.entries.push(PoolEntry { dn });
            for (name, value) in attrs {
                let name = name.to_ascii_lowercase();
                names.insert(name.clone());
                if name != "userpassword" {
                    self.pairs.push((name, value));
                }
            }
        }
        self.attr_names = names.into_iter().collect();
        Ok(())
    }
}

/// The data files to load: `*.ldif` in `dir` in name order; files whose name starts with
/// `aliases` only when `aliases` is set.
pub fn data_files(dir: &Path, aliases: bool) -> Result<Vec<PathBuf>, DataError> {
    let err = |e: std::io::Error| DataError::Read {
        path: dir.display().to_string(),
        reason: e.to_string(),
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let p = entry.map_err(err)?.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".ldif") && (aliases || !name.starts_with("aliases")) {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// Concatenates `files` (one LDIF stream, as slapadd and canopy import read it) and parses it.
pub fn load(files: &[PathBuf]) -> Result<(Vec<u8>, Pool), DataError> {
    let mut all = Vec::new();
    for f in files {
        let text = std::fs::read(f).map_err(|e| DataError::Read {
            path: f.display().to_string(),
            reason: e.to_string(),
        })?;
        all.extend_from_slice(&text);
        // Records of two files must not run together.
        all.extend_from_slice(b"\n\n");
    }
    let pool = Pool::from_ldif(&all).map_err(|reason| DataError::Read {
        path: files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        reason,
    })?;
    Ok((all, pool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_from_ldif() {
        let pool = Pool::from_ldif(
            b"dn: dc=x\nobjectClass: domain\ndc: x\n\ndn: cn=a,dc=x\nCN: a\nuserPassword: s\n",
        )
        .unwrap();
        assert_eq!(pool.entries.len(), 2);
        assert_eq!(
            pool.attr_names,
            vec!["cn", "dc", "objectclass", "userpassword"]
        );
        assert_eq!(pool.pairs.len(), 3);
        assert!(Pool::from_ldif(b"dn: cn=a\nchangetype: delete\n").is_err());
    }

    #[test]
    fn alias_data_only_on_request() {
        let dir = std::env::temp_dir().join(format!("conformance-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["20-more.ldif", "10-base.ldif", "aliases.ldif", "notes.txt"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let names = |aliases| -> Vec<String> {
            data_files(&dir, aliases)
                .unwrap()
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(false), vec!["10-base.ldif", "20-more.ldif"]);
        assert_eq!(
            names(true),
            vec!["10-base.ldif", "20-more.ldif", "aliases.ldif"]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
