//! What the replication tests of canopy consumers share: the gate that skips them when the target is
//! slapd (both ends are started by the test), and a convergence assert that shows the consumer's log.

use std::time::Duration;

use canopy_harness::consumer_support::wait_converged;
use canopy_harness::{Bind, Server, Target};

/// Whether the target is canopy; prints why the test is skipped when it is slapd.
pub fn canopy_only(why: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {why}");
        return false;
    }
    true
}

/// Panics unless `consumer` holds `provider`'s contextCSN and contents within `limit`.
#[track_caller]
pub fn assert_converged(provider: &Server, consumer: &Server, limit: Duration, what: &str) {
    if let Err(diff) = wait_converged(provider, consumer, limit) {
        panic!(
            "{what}: no convergence within {limit:?}:\n{diff}\nconsumer log:\n{}",
            consumer.log()
        );
    }
}

/// Adds a unit under `base` with people and a sub-unit, modifies, renames within the unit and under a new superior,
/// deletes a leaf and then the sub-unit's subtree. `tag` keeps two runs apart.
pub fn sample_writes(p: &Server, base: &str, tag: &str) {
    let ou = format!("ou=u{tag},{base}");
    let mut ldif = format!("dn: {ou}\nobjectClass: organizationalUnit\nou: u{tag}\n\n");
    for i in 0..4 {
        ldif.push_str(&format!(
            "dn: cn=p{i},{ou}\nobjectClass: person\ncn: p{i}\nsn: S{i}\n\n"
        ));
    }
    ldif.push_str(&format!(
        "dn: ou=sub,{ou}\nobjectClass: organizationalUnit\nou: sub\n\n\
         dn: cn=deep,ou=sub,{ou}\nobjectClass: person\ncn: deep\nsn: D\n\n"
    ));
    p.add(&Bind::Root, &ldif).expect_code(0, "adds");
    p.modify(
        &Bind::Root,
        &format!(
            "dn: cn=p0,{ou}\nchangetype: modify\nreplace: sn\nsn: Changed\n-\nadd: description\ndescription: {tag}\n"
        ),
    )
    .expect_code(0, "modify");
    p.modify(
        &Bind::Root,
        &format!("dn: cn=p1,{ou}\nchangetype: modrdn\nnewrdn: cn=p1b\ndeleteoldrdn: 1\n"),
    )
    .expect_code(0, "rename");
    p.modify(
        &Bind::Root,
        &format!(
            "dn: cn=p2,{ou}\nchangetype: modrdn\nnewrdn: cn=p2\ndeleteoldrdn: 1\nnewsuperior: ou=sub,{ou}\n"
        ),
    )
    .expect_code(0, "move");
    p.modify(
        &Bind::Root,
        &format!("dn: cn=p3,{ou}\nchangetype: delete\n"),
    )
    .expect_code(0, "leaf delete");
    for dn in [
        format!("cn=deep,ou=sub,{ou}"),
        format!("cn=p2,ou=sub,{ou}"),
        format!("ou=sub,{ou}"),
    ] {
        p.modify(&Bind::Root, &format!("dn: {dn}\nchangetype: delete\n"))
            .expect_code(0, "subtree delete");
    }
}
