//! Password storage on writes: cleartext userPassword values become hashes in the configured scheme,
//! with SCRAM secrets in authPassword beside them; deleting a cleartext value deletes the hash it
//! verifies against.

use canopy_core::LdapError;
use canopy_directory::Snapshot;
use canopy_proto::{Change, ModifyOperation, PartialAttribute, ResultCode};
use canopy_schema::{NormDn, Schema};

use crate::databases::Database;
use crate::state::State;

/// The attribute holding SCRAM secrets (RFC 3112, values in RFC 5803's format).
pub const AUTH_PASSWORD: &str = "authPassword";

/// Whether `desc` names userPassword or a subtype of it.
pub fn is_user_password(schema: &Schema, desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    match (
        schema.attribute_type(name),
        schema.attribute_type("userPassword"),
    ) {
        (Some(at), Some(pw)) => schema.is_subtype_of(at, pw),
        _ => name.eq_ignore_ascii_case("userPassword"),
    }
}

/// Whether `desc` names authPassword.
pub fn is_auth_password(desc: &str) -> bool {
    let name = desc.split(';').next().unwrap_or(desc);
    name.eq_ignore_ascii_case(AUTH_PASSWORD) || name == "1.3.6.1.4.1.4203.1.3.4"
}

/// Whether a value already carries a `{SCHEME}` prefix (known or not): it is stored as given.
fn has_scheme(value: &[u8]) -> bool {
    let Some(rest) = value.strip_prefix(b"{") else {
        return false;
    };
    match rest.iter().position(|b| *b == b'}') {
        Some(end) if end > 0 && end <= 32 => rest[..end]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.' || *b == b'_'),
        _ => false,
    }
}

/// Values hashed for storage, and the SCRAM secrets of the last cleartext one (empty when all were
/// given hashed).
pub struct Hashed {
    pub values: Vec<Vec<u8>>,
    pub scram: Vec<Vec<u8>>,
}

/// Hashes the cleartext values among `values` (off the async workers: hashing is slow by design).
pub async fn hash_values(state: &State, values: Vec<Vec<u8>>) -> Result<Hashed, LdapError> {
    if values.iter().all(|v| has_scheme(v)) {
        return Ok(Hashed {
            values,
            scram: Vec::new(),
        });
    }
    let gate = state.hash_gate.clone();
    let state = state.clone();
    gate.run(None, move || hash_blocking(&state, values))
        .await
        .ok_or_else(|| LdapError::new(ResultCode::Other, "password hashing failed"))?
}

fn hash_blocking(state: &State, values: Vec<Vec<u8>>) -> Result<Hashed, LdapError> {
    let mut out = Hashed {
        values: Vec::with_capacity(values.len()),
        scram: Vec::new(),
    };
    for value in values {
        if has_scheme(&value) {
            out.values.push(value);
            continue;
        }
        let one = hash_one(state, &value)?;
        out.scram = one.scram;
        out.values.extend(one.values);
    }
    Ok(out)
}

/// Hashes one password given through Password Modify, whatever it looks like (a new password that
/// starts with `{...}` is still a password there).
pub async fn hash_cleartext(state: &State, password: Vec<u8>) -> Result<Hashed, LdapError> {
    let gate = state.hash_gate.clone();
    let state = state.clone();
    gate.run(None, move || hash_one(&state, &password))
        .await
        .ok_or_else(|| LdapError::new(ResultCode::Other, "password hashing failed"))?
}

fn hash_one(state: &State, password: &[u8]) -> Result<Hashed, LdapError> {
    let scheme = canopy_password::Scheme::from_name(&state.config.password_hash)
        .ok_or_else(|| LdapError::new(ResultCode::Other, "bad password_hash setting"))?;
    let hashed = canopy_password::hash_with(scheme, password, &state.config.passwords.argon2())
        .map_err(|_| LdapError::new(ResultCode::Other, "password hashing failed"))?;
    Ok(Hashed {
        values: vec![hashed.into_bytes()],
        scram: super::scram_values(password, state.config.passwords.scram_iterations),
    })
}

/// Hashes cleartext userPassword values of an add and adds their SCRAM secrets.
pub async fn prepare_add(
    state: &State,
    attributes: &mut Vec<PartialAttribute>,
) -> Result<(), LdapError> {
    let schema = state.databases.schema().clone();
    let mut scram = Vec::new();
    for attr in attributes.iter_mut() {
        if is_user_password(&schema, &attr.name) {
            let hashed = hash_values(state, std::mem::take(&mut attr.values)).await?;
            attr.values = hashed.values;
            if !hashed.scram.is_empty() {
                scram = hashed.scram;
            }
        }
    }
    if !scram.is_empty() {
        match attributes.iter_mut().find(|a| is_auth_password(&a.name)) {
            Some(existing) => existing.values.extend(scram),
            None => attributes.push(PartialAttribute {
                name: AUTH_PASSWORD.into(),
                values: scram,
            }),
        }
    }
    Ok(())
}

/// The secret values an entry holds now: userPassword values and authPassword values.
#[derive(Debug, Default)]
pub struct Current {
    pub passwords: Vec<Vec<u8>>,
    pub auth_passwords: Vec<Vec<u8>>,
    /// The entry's DN as stored.
    pub dn: Option<String>,
}

/// Reads an entry's secret attributes; an absent entry has none.
pub fn current(state: &State, ndn: &NormDn) -> Result<Current, LdapError> {
    let Some(dir) = state.databases.route(ndn) else {
        return Ok(Current::default());
    };
    current_in(dir, &dir.read()?, ndn)
}

/// [`current`] within a read transaction the caller holds.
pub fn current_in(dir: &Database, txn: &Snapshot, ndn: &NormDn) -> Result<Current, LdapError> {
    let mut out = Current::default();
    if !dir.holds(ndn) {
        return Ok(out);
    }
    let Some((_, bytes)) = dir.lookup(txn, ndn)? else {
        return Ok(out);
    };
    let stored = canopy_directory::Directory::parse_stored(bytes)?;
    out.dn = Some(String::from_utf8_lossy(stored.dn).into_owned());
    for attr in canopy_core::wire::attributes(stored.secret) {
        let (desc, values) =
            attr.map_err(|_| LdapError::new(ResultCode::Other, "unreadable entry"))?;
        let values = values.into_iter().map(|v| v.to_vec());
        if is_auth_password(desc) {
            out.auth_passwords.extend(values);
        } else {
            out.passwords.extend(values);
        }
    }
    Ok(out)
}

/// Rewrites the password changes of a modify: cleartext values hashed, cleartext deletions turned
/// into the stored values they verify against, and authPassword kept in step.
pub async fn prepare_modify(
    state: &State,
    ndn: &NormDn,
    changes: &mut Vec<Change>,
) -> Result<(), LdapError> {
    let schema = state.databases.schema().clone();
    if !changes
        .iter()
        .any(|c| is_user_password(&schema, &c.modification.name))
    {
        return Ok(());
    }
    let now = current(state, ndn)?;
    let mut extra = Vec::new();
    for change in changes.iter_mut() {
        if !is_user_password(&schema, &change.modification.name) {
            continue;
        }
        let values = std::mem::take(&mut change.modification.values);
        match change.operation {
            ModifyOperation::Add | ModifyOperation::Replace => {
                let hashed = hash_values(state, values).await?;
                change.modification.values = hashed.values;
                if !hashed.scram.is_empty() || change.operation == ModifyOperation::Replace {
                    // New SCRAM secrets follow the newest password; stale ones go.
                    extra.push(replace_auth(hashed.scram));
                }
            }
            ModifyOperation::Delete => {
                let (values, stale) = deletions(state, &now, values).await?;
                let all = values.is_empty();
                change.modification.values = values;
                if all && !now.auth_passwords.is_empty() {
                    extra.push(replace_auth(Vec::new()));
                } else if !stale.is_empty() {
                    extra.push(Change {
                        operation: ModifyOperation::Delete,
                        modification: PartialAttribute {
                            name: AUTH_PASSWORD.into(),
                            values: stale,
                        },
                    });
                }
            }
            ModifyOperation::Increment => change.modification.values = values,
        }
    }
    changes.extend(extra);
    Ok(())
}

fn replace_auth(values: Vec<Vec<u8>>) -> Change {
    Change {
        operation: ModifyOperation::Replace,
        modification: PartialAttribute {
            name: AUTH_PASSWORD.into(),
            values,
        },
    }
}

/// For each value to delete: the stored value equal to it, else the stored hash it verifies against
/// (else the value itself, which then fails as noSuchAttribute). Also the SCRAM secrets derived from it.
async fn deletions(
    state: &State,
    now: &Current,
    values: Vec<Vec<u8>>,
) -> Result<(Vec<Vec<u8>>, Vec<Vec<u8>>), LdapError> {
    if values.is_empty() {
        return Ok((values, Vec::new()));
    }
    let passwords = now.passwords.clone();
    let auth = now.auth_passwords.clone();
    state
        .hash_gate
        .run(None, move || {
            let mut out = Vec::new();
            let mut stale = Vec::new();
            for value in values {
                if passwords.contains(&value) {
                    out.push(value);
                    continue;
                }
                let matched = passwords
                    .iter()
                    .find(|stored| canopy_password::verify(stored, &value).unwrap_or(false));
                out.push(matched.cloned().unwrap_or_else(|| value.clone()));
                if matched.is_some() {
                    stale.extend(
                        auth.iter()
                            .filter(|a| {
                                matches!(canopy_password::scram::ScramSecret::parse(a),
                        Ok(Some(s)) if s.matches_password(&value))
                            })
                            .cloned(),
                    );
                }
            }
            (out, stale)
        })
        .await
        .ok_or_else(|| LdapError::new(ResultCode::Other, "password check failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_prefixes() {
        assert!(has_scheme(b"{SSHA}abc"));
        assert!(has_scheme(b"{ARGON2}$argon2id$"));
        assert!(has_scheme(b"{CLEARTEXT}pw"));
        assert!(has_scheme(b"{SASL}user@realm"));
        assert!(!has_scheme(b"secret"));
        assert!(!has_scheme(b"{}x"));
        assert!(!has_scheme(b"{not a scheme}x"));
        assert!(!has_scheme(b"{unterminated"));
    }
}
