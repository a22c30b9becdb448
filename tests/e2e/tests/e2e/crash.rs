//! Crash test: SIGKILL the server in the middle of a stream of acknowledged adds, restart it on the
//! same data directory, and check that every acknowledged entry survived. Five rounds, under 60 s.
//! Ignored by default (run by scripts/test.sh): `cargo test -p canopy-e2e -- --ignored crash`.

use canopy_e2e::*;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ROUNDS: u64 = 5;
const BUDGET: Duration = Duration::from_secs(60);

/// A small xorshift generator: enough to pick kill points, reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn from_env() -> Rng {
        let seed = std::env::var("CANOPY_E2E_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap();
                now.as_nanos() as u64 | 1
            });
        eprintln!("crash test seed: {seed} (set CANOPY_E2E_SEED to repeat)");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The DNs under ou=crash that the server returns.
fn stored(s: &Server) -> BTreeSet<String> {
    let out = s.search(
        &Bind::Root,
        &[
            "-E",
            "pr=500/noprompt",
            "-b",
            &format!("ou=crash,{SUFFIX}"),
            "-s",
            "one",
            "(objectClass=*)",
            "1.1",
        ],
    );
    out.expect_code(0, "listing ou=crash after restart");
    out.records()
        .iter()
        .map(|r| r.dn().to_lowercase())
        .collect()
}

#[test]
#[ignore = "slow; scripts/test.sh runs it: cargo test -p canopy-e2e -- --ignored crash"]
fn crash_keeps_acknowledged_writes() {
    let started = Instant::now();
    let mut rng = Rng::from_env();
    let mut s = Server::start();
    s.add(
        &Bind::Root,
        &format!("dn: ou=crash,{SUFFIX}\nobjectClass: organizationalUnit\nou: crash\n"),
    )
    .expect_code(0, "adding ou=crash");
    let mut acknowledged: Vec<String> = Vec::new();

    for round in 0..ROUNDS {
        let kill_after = 20 + rng.below(150) as usize;
        let mut writer = s.python_spawn("stream_adds.py", &[&(round * 100_000).to_string()]);
        let stdout = writer.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut acked_this_round = 0;
        while acked_this_round < kill_after {
            match rx.recv_timeout(Duration::from_secs(20)) {
                Ok(dn) => {
                    acknowledged.push(dn.to_lowercase());
                    acked_this_round += 1;
                }
                Err(_) => {
                    let _ = writer.kill();
                    let mut err = String::new();
                    let _ = writer.stderr.take().unwrap().read_to_string(&mut err);
                    panic!(
                        "writer stalled after {acked_this_round} adds in round {round}: {err}\n{}",
                        s.log()
                    );
                }
            }
        }
        // The writer is mid-stream: the kill lands between or inside its requests.
        s.kill9();
        let status = writer.wait().unwrap();
        reader.join().unwrap();
        // Adds acknowledged after we stopped counting but before the kill are acknowledged too.
        acknowledged.extend(rx.try_iter().map(|dn| dn.to_lowercase()));
        assert!(status.success(), "writer failed in round {round}: {status}");

        s.restart();
        let present = stored(&s);
        let lost: Vec<&String> = acknowledged
            .iter()
            .filter(|dn| !present.contains(*dn))
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: {} acknowledged adds lost after kill -9, e.g. {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        );
        // The database is usable, not just readable.
        s.add(&Bind::Root, &format!("dn: cn=after{round},ou=crash,{SUFFIX}\nobjectClass: organizationalRole\ncn: after{round}\n"))
            .expect_code(0, "write after restart");
        acknowledged.push(format!("cn=after{round},ou=crash,{SUFFIX}").to_lowercase());
        assert!(
            started.elapsed() < BUDGET,
            "crash test over its {BUDGET:?} budget"
        );
    }
    let present = stored(&s);
    assert!(acknowledged.iter().all(|dn| present.contains(dn)));
    eprintln!(
        "crash test: {} acknowledged writes survived {ROUNDS} kills in {:?}",
        acknowledged.len(),
        started.elapsed()
    );
}
