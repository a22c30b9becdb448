//! Binds against slow (Argon2id) password hashes: a flood of failed binds from one address neither
//! starves a user on another nor grows the server's memory (the hash gate), and the bind cache
//! (`[passwords] bind_cache_secs`) never lets an old or wrong password in. Canopy's own settings;
//! skipped with a message against slapd.

use canopy_e2e::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

fn canopy_target(what: &str) -> bool {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: {what} is canopy's own");
        return false;
    }
    true
}

fn ber_len(n: usize) -> Vec<u8> {
    if n < 0x80 {
        return vec![n as u8];
    }
    vec![0x81, n as u8]
}

fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend(ber_len(body.len()));
    out.extend_from_slice(body);
    out
}

/// A simple BindRequest with message ID 1..=127.
fn bind_request(id: u8, dn: &str, password: &str) -> Vec<u8> {
    let mut op = vec![0x02, 0x01, 0x03];
    op.extend(tlv(0x04, dn.as_bytes()));
    op.extend(tlv(0x80, password.as_bytes()));
    let mut msg = vec![0x02, 0x01, id];
    msg.extend(tlv(0x60, &op));
    tlv(0x30, &msg)
}

/// Reads one LDAPMessage (short answers only: a bind response).
fn read_message(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head)?;
    let len = match head[1] {
        n if n & 0x80 == 0 => n as usize,
        n => {
            let mut bytes = vec![0u8; (n & 0x7f) as usize];
            stream.read_exact(&mut bytes)?;
            bytes.iter().fold(0usize, |acc, b| acc << 8 | *b as usize)
        }
    };
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok(body)
}

/// Sets `dn`'s password through Password Modify, so that canopy hashes it with its default, Argon2id.
fn set_password(s: &Server, dn: &str, password: &str) {
    s.tool("ldappasswd", &Bind::Root, &["-s", password, dn], None)
        .expect_code(0, &format!("ldappasswd {dn}"));
}

/// `threads` connections from 127.0.0.1 binding for `for_secs` with wrong passwords as `dn` or as DNs
/// that do not exist, one bind after another; the number of answers they got.
fn flood(
    port: u16,
    threads: usize,
    for_secs: u64,
    dn: &str,
) -> (Arc<AtomicU64>, Vec<thread::JoinHandle<()>>) {
    let answers = Arc::new(AtomicU64::new(0));
    let stop_at = Instant::now() + Duration::from_secs(for_secs);
    let mut all = Vec::new();
    for n in 0..threads {
        let answers = answers.clone();
        let dn = dn.to_string();
        all.push(thread::spawn(move || {
            let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
                return;
            };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
            let mut id = 0u8;
            while Instant::now() < stop_at {
                id = id % 127 + 1;
                let target = if n % 2 == 0 {
                    dn.clone()
                } else {
                    format!("uid=nobody{n}x{id},ou=people,{SUFFIX}")
                };
                if stream
                    .write_all(&bind_request(id, &target, "wrong guess"))
                    .is_err()
                {
                    return;
                }
                if read_message(&mut stream).is_err() {
                    return;
                }
                answers.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    (answers, all)
}

/// 120 connections on TCP send failed binds that each cost an Argon2id check (the users's hash or the
/// dummy one); the server runs one check at a time. A user binding over ldapi:// (another source for
/// the gate's turns) waits for at most a check or two, not for the flood's queue of over a hundred
/// (2.4 s and more); the server's memory stays near one hash's worth above idle, not one per connection.
#[test]
fn a_bind_flood_neither_starves_a_user_nor_grows_memory() {
    if !canopy_target("the hash gate") {
        return;
    }
    let s = Server::start_canopy_with_config(
        "[passwords]\nmax_parallel_hashes = 1\n[bind_backoff]\nthreshold = 0\n",
    );
    let alice = user_dn("alice");
    let bob = user_dn("bob");
    set_password(&s, &alice, "alice-argon2");
    set_password(&s, &bob, "bob-argon2");
    let before = s.rss_kib().expect("canopy's RSS");
    let (answers, threads) = flood(s.port(), 120, 6, &bob);
    let peak = Arc::new(AtomicU64::new(before));
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (peak, watching, pid) = (peak.clone(), watching.clone(), s.pid().unwrap());
        thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    let rss = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
                        .unwrap_or(0);
                    peak.fetch_max(rss, Ordering::Relaxed);
                }
                thread::sleep(Duration::from_millis(50));
            }
        })
    };
    thread::sleep(Duration::from_millis(1500));
    let user = Bind::Simple(alice.clone(), "alice-argon2".into());
    let mut waits = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        s.whoami(Via::Ldapi, &user)
            .expect_code(0, "alice's bind during the flood");
        waits.push(started.elapsed());
    }
    let flooded = answers.load(Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    watching.store(false, Ordering::Relaxed);
    watcher.join().unwrap();
    assert!(
        flooded >= 10,
        "the flood got only {flooded} answers: it did not load the server"
    );
    let slowest = waits.iter().max().unwrap();
    assert!(
        *slowest < Duration::from_millis(1200),
        "alice waited {waits:?} for her binds behind a flood from another source"
    );
    let grown = peak.load(Ordering::Relaxed).saturating_sub(before);
    assert!(
        grown < 200 * 1024,
        "the server grew by {} MiB during a flood of 120 binds (one 19 MiB hash at a time)",
        grown / 1024
    );
    // Everyone is answered once the flood ends.
    s.whoami(Via::Ldap, &Bind::Simple(bob.clone(), "bob-argon2".into()))
        .expect_code(0, "bob's bind after the flood");
}

/// With the bind cache on, a remembered password works only as long as it is the entry's password:
/// after a change the old one fails, and a wrong password never passes.
#[test]
fn the_bind_cache_lets_in_only_the_current_password() {
    if !canopy_target("the bind cache") {
        return;
    }
    let s = Server::start_canopy_with_config("[passwords]\nbind_cache_secs = 300\n");
    let alice = user_dn("alice");
    let with = |pw: &str| Bind::Simple(alice.clone(), pw.into());
    set_password(&s, &alice, "first-pw");
    for _ in 0..3 {
        s.whoami(Via::Ldap, &with("first-pw"))
            .expect_code(0, "the current password");
    }
    s.whoami(Via::Ldap, &with("First-pw"))
        .expect_code(49, "a wrong password after the right one was remembered");
    set_password(&s, &alice, "second-pw");
    s.whoami(Via::Ldap, &with("first-pw"))
        .expect_code(49, "the remembered password after a change");
    s.whoami(Via::Ldap, &with("second-pw"))
        .expect_code(0, "the new password");
    s.whoami(Via::Ldap, &with("second-pw"))
        .expect_code(0, "the new password, remembered");
    // The value replaced by a hash of another password written directly.
    let change =
        format!("dn: {alice}\nchangetype: modify\nreplace: userPassword\nuserPassword: third-pw\n");
    s.modify(&Bind::Root, &change)
        .expect_code(0, "replacing userPassword");
    s.whoami(Via::Ldap, &with("second-pw"))
        .expect_code(49, "the remembered password after a replace");
    s.whoami(Via::Ldap, &with("third-pw"))
        .expect_code(0, "the replaced password");
    // Deleting the password: nothing to bind with, remembered or not.
    let delete = format!("dn: {alice}\nchangetype: modify\ndelete: userPassword\n");
    s.modify(&Bind::Root, &delete)
        .expect_code(0, "deleting userPassword");
    s.whoami(Via::Ldap, &with("third-pw"))
        .expect_code(49, "a remembered password of an entry without one");
}
