//! `canopy modify`: applies LDIF change records to a database offline, as slapmodify does.
//!
//! Each record is one write through the database's own write pipeline (schema checks, indexes,
//! overlays, CSNs, the change feed), made by the root DN without access control, so what it leaves is
//! what the same change made online would leave. Values are stored as given: passwords are not hashed
//! (slapadd and slapmodify store them as given too).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use canopy_core::check::{build_entry, check_entry};
use canopy_core::LdapError;
use canopy_directory::{structural, ModifyDn, Stamp, Unrestricted, WriteOp, WriteRequest};
use canopy_proto::ldif::{LdifChange, LdifReader, LdifRecord};
use canopy_proto::{Dn, Rdn, ResultCode};
use canopy_server::{Config, Database};

/// Applies the change records of `file` (standard input when None) to the database of `config`, in
/// order. Stops at the first record that fails unless `keep_going` (slapmodify's `-c`); either way a
/// failure names the record and its result and makes the command fail.
pub fn modify(config: &Config, file: Option<&Path>, keep_going: bool) -> Result<()> {
    let _lock = crate::service::lock_data_dir(&config.data_dir, "modify")?;
    let dir = canopy_server::open_directory(config, true)?;
    let (input, name): (Box<dyn BufRead>, String) = match file {
        Some(path) => (
            Box::new(BufReader::new(
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?,
            )),
            path.display().to_string(),
        ),
        None => (
            Box::new(BufReader::new(std::io::stdin())),
            "standard input".to_string(),
        ),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let guard = Arc::new(Unrestricted {
        dn: config.root_dn.clone(),
    });
    let (mut applied, mut failed) = (0usize, 0usize);
    for record in LdifReader::new(input) {
        let record = record.map_err(|e| anyhow!("{name}: {e}"))?;
        let shown = String::from_utf8_lossy(match &record {
            LdifRecord::Content { dn, .. } | LdifRecord::Change { dn, .. } => dn,
        })
        .into_owned();
        let outcome = write_op(&dir, &config.root_dn, record).and_then(|op| {
            let request = WriteRequest {
                op,
                guard: guard.clone(),
            };
            runtime
                .block_on(dir.write(request))
                .map_err(|e| e.into_ldap())
        });
        match outcome {
            Ok(()) => applied += 1,
            Err(e) => {
                let code = e.code.code();
                eprintln!("canopy: {name}: entry {shown:?}: {} ({code})", e.message);
                failed += 1;
                if !keep_going {
                    bail!(
                        "{name}: stopped at entry {shown:?} ({applied} changes applied before it)"
                    );
                }
            }
        }
    }
    eprintln!("modify: {applied} changes applied, {failed} failed");
    if failed > 0 {
        bail!("{name}: {failed} changes failed");
    }
    Ok(())
}

/// The write a record asks for. A record without `changetype` adds its entry.
fn write_op(dir: &Database, root_dn: &str, record: LdifRecord) -> Result<WriteOp, LdapError> {
    let (raw_dn, change) = match record {
        LdifRecord::Content { dn, attrs } => (dn, LdifChange::Add(attrs)),
        LdifRecord::Change { dn, change, .. } => (dn, change),
    };
    let (mut dn, ndn) = dir.normalize(&raw_dn)?;
    if !dir.suffix().is_suffix_of(&ndn) {
        return Err(LdapError::new(
            ResultCode::NoSuchObject,
            format!("outside the database's suffix {}", dir.suffix().as_str()),
        ));
    }
    Ok(match change {
        LdifChange::Add(attrs) => {
            let mut attrs = crate::tools::group(attrs);
            dir.pretty_values(&mut attrs);
            dir.pretty(&mut dn);
            let mut entry = build_entry(dir.schema(), dn, ndn, &attrs)?;
            check_entry(dir.schema(), &entry)?;
            let structural = structural(dir, &entry)?;
            Stamp::identify(&mut entry, root_dn, &structural);
            WriteOp::Add(entry)
        }
        LdifChange::Delete => WriteOp::Delete { dn, ndn },
        LdifChange::Modify(mut changes) => {
            canopy_core::modify::check_changes(dir.schema(), &changes)?;
            for change in &mut changes {
                dir.pretty_values(std::slice::from_mut(&mut change.modification));
            }
            WriteOp::Modify { dn, ndn, changes }
        }
        LdifChange::ModDn {
            new_rdn,
            delete_old_rdn,
            new_superior,
        } => {
            let new_rdn = Rdn::parse(&new_rdn)
                .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
            let rdn = Dn {
                rdns: vec![new_rdn.clone()],
            };
            dir.schema()
                .normalize_dn(&rdn)
                .map_err(|_| LdapError::new(ResultCode::InvalidDnSyntax, "invalid new RDN"))?;
            let new_superior = match new_superior {
                Some(raw) => Some(dir.normalize(&raw)?),
                None => None,
            };
            WriteOp::ModifyDn(ModifyDn {
                dn,
                ndn,
                new_rdn,
                delete_old_rdn,
                new_superior,
            })
        }
    })
}
