//! `canopy policy-check`: the password policy governing one entry and its account state, offline (from
//! the configured ppolicy overlay and the database), and what a bind with the right password would
//! get now.

use anyhow::{anyhow, bail, Result};
use canopy_directory::overlay::ppolicy::bind::{counted_failures, decide, lock_state, Lock};
use canopy_directory::overlay::ppolicy::Instant;
use canopy_server::Config;

/// Prints the policy and state of `user`.
pub fn policy_check(config: &Config, user: &str) -> Result<()> {
    let pp = canopy_server::overlays::ppolicy(&config.overlay, &config.root_dn)
        .map_err(|e| anyhow!("{e}"))?;
    let Some(pp) = pp else {
        bail!("no ppolicy overlay is configured ([[overlay]] name = \"ppolicy\")");
    };
    let dir = canopy_server::open_directory(config, false)?;
    let (_, ndn) = dir
        .normalize(user.as_bytes())
        .map_err(|e| anyhow!("--user {user:?}: {}", e.message))?;
    let txn = dir.read()?;
    let entry = dir
        .entry_at(&txn, &ndn)
        .ok_or_else(|| anyhow!("no entry {user:?} in the database"))?;
    println!("entry: {}", entry.dn);
    let own = entry.get("pwdPolicySubentry").is_some();
    let Some(policy) = pp
        .policy_of(dir.backend(), &txn, &entry)
        .map_err(|e| anyhow!("{}", e.message))?
    else {
        println!("policy: none (no pwdPolicySubentry and no default policy entry)");
        return Ok(());
    };
    let source = if own {
        "pwdPolicySubentry"
    } else {
        "the default"
    };
    println!("policy: {} (from {source})", policy.dn);
    for (name, value) in policy.describe() {
        println!("  {name}: {value}");
    }
    let now = Instant::now();
    println!("state:");
    let mut any = false;
    for attr in &entry.attrs {
        if attr.desc.starts_with("pwd") && attr.desc != "pwdPolicySubentry" {
            for value in &attr.values {
                any = true;
                let value = String::from_utf8_lossy(value);
                let shown = if attr.desc == "pwdHistory" {
                    // Only the time: the rest is a stored password.
                    value.split('#').next().unwrap_or_default().to_string() + "#..."
                } else {
                    value.into_owned()
                };
                println!("  {}: {shown}", attr.desc);
            }
        }
    }
    if !any {
        println!("  (none)");
    }
    let has_password = entry.get(&policy.attribute).is_some();
    println!("account:");
    println!(
        "  {}: {}",
        policy.attribute,
        if has_password {
            "set"
        } else {
            "absent (the policy does not apply to binds)"
        }
    );
    let lock = match lock_state(&policy, &entry, now) {
        Lock::Open => "open".to_string(),
        Lock::Expired => "the lock has run out (the next bind removes it)".to_string(),
        Lock::Locked => "locked".to_string(),
        Lock::Delayed => "delayed (pwdMinDelay) after a failure".to_string(),
    };
    println!("  lock: {lock}");
    println!(
        "  failures counting now: {} of pwdMaxFailure {}",
        counted_failures(&policy, &entry, now),
        policy.max_failure
    );
    let mut next = entry.clone();
    let verdict = decide(&policy, true, &entry, &mut next, true, now);
    let outcome = if verdict.accepted {
        "succeeds"
    } else {
        "fails (invalidCredentials)"
    };
    println!("a bind with the right password now {outcome}");
    if let Some(warning) = verdict.warning {
        println!("  warning: {warning:?}");
    }
    if let Some(error) = verdict.error {
        println!("  error: {error:?}");
    }
    if verdict.must_change {
        println!("  the session may only change its own password (pwdReset)");
    }
    Ok(())
}
