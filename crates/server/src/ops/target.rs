//! What an update checks and reads around its write: the assertion control (RFC 4528) and the pre-read
//! and post-read controls (RFC 4527). Referral objects (RFC 3296 §5.4) are the write's own business.
//!
//! The checks read in their own transaction just before the write, the post-read just after it.

use canopy_core::{Entry, LdapError};
use canopy_proto::oid::{CONTROL_POST_READ, CONTROL_PRE_READ};
use canopy_proto::{Control, ResultCode};
use canopy_schema::NormDn;

use canopy_directory::referral::is_referral;
use canopy_directory::{Directory, Stamp};

use crate::access::{Action, Who};
use crate::acl::ops::{check_delete, check_rename};
use crate::databases::Database;
use crate::ops::OpError;
use crate::readentry::{check_assertion, load, read_control, unstored};
use crate::reqctl::RequestControls;

/// Before the write of an update on an existing entry: the assertion and the pre-read on the entry. A missing entry is left for the write to report. slapd checks the access of a
/// delete or rename (`access`) before the assertion, that of a modify after it.
pub fn before(
    dir: &Database,
    who: &Who,
    ctl: &RequestControls,
    ndn: &NormDn,
    access: Option<Action>,
) -> Result<Vec<Control>, OpError> {
    let schema = dir.schema();
    if ctl.assertion.is_none() && ctl.pre_read.is_none() {
        return Ok(Vec::new());
    }
    let txn = dir.read()?;
    let Some((id, bytes)) = dir.lookup(&txn, ndn)? else {
        return Ok(Vec::new());
    };
    // A modify of a referral object is answered with its referral before the assertion is looked at (a
    // delete or rename tests the assertion first): the write says so.
    let referral_first = access.is_none();
    if referral_first && !ctl.manage_dsa_it && is_referral(&Directory::parse_stored(bytes)?) {
        return Ok(Vec::new());
    }
    if let Some(action) = access {
        let entry = Directory::parse_stored(bytes)?
            .to_entry()
            .map_err(|_| LdapError::new(ResultCode::Other, "stored entry is unreadable"))?;
        match action {
            Action::Delete => check_delete(dir, &txn, who, &entry)?,
            Action::Rename(to) => check_rename(dir, &txn, who, &entry, to.as_ref(), &[])?,
        }
    }
    let seen = load(dir, &txn, who, id, bytes)?;
    if let Some(filter) = &ctl.assertion {
        check_assertion(schema, &seen, filter)?;
    }
    Ok(ctl
        .pre_read
        .iter()
        .map(|attrs| read_control(schema, CONTROL_PRE_READ, attrs, &seen))
        .collect())
}

/// Before an add: the assertion is tested on the entry to be added, as slapd does.
pub fn before_add(
    dir: &Database,
    who: &Who,
    ctl: &RequestControls,
    entry: &Entry,
) -> Result<(), OpError> {
    if let Some(filter) = &ctl.assertion {
        let txn = dir.read()?;
        // The entry as it will be stored: the writer stamps its time and CSN, this is a close likeness.
        let mut stamped = entry.clone();
        Stamp::now().fill(&mut stamped);
        check_assertion(dir.schema(), &unstored(dir, &txn, who, &stamped), filter)?;
    }
    Ok(())
}

/// After a successful write: the post-read of the entry now at `ndn`, appended to `controls`.
pub fn after(
    dir: &Database,
    who: &Who,
    ctl: &RequestControls,
    ndn: &NormDn,
    controls: &mut Vec<Control>,
) {
    let Some(attrs) = &ctl.post_read else {
        return;
    };
    // The update is done: a failure to read it back loses the control, never the success.
    let read = || -> Result<Option<Control>, LdapError> {
        let txn = dir.read()?;
        let Some((id, bytes)) = dir.lookup(&txn, ndn)? else {
            return Ok(None);
        };
        let seen = load(dir, &txn, who, id, bytes)?;
        Ok(Some(read_control(
            dir.schema(),
            CONTROL_POST_READ,
            attrs,
            &seen,
        )))
    };
    match read() {
        Ok(control) => controls.extend(control),
        Err(error) => tracing::warn!(%error.message, "post-read failed"),
    }
}
