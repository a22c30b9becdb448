//! Rough bulk-load timing: `cargo run --release -p canopy-mdb --example bulk_bench -- DIR [ENTRIES]`.
//!
//! Synthetic entries shaped like a DirectoryMark people tree (ou=people,dc=example,dc=com with ~600-byte
//! entries and equality keys on objectClass, uid, cn, sn, mail). Figures for docs/PERFORMANCE.md come
//! from the benchmark tool; this only checks the storage layer in isolation.

use std::time::Instant;

use canopy_mdb::{Store, StoreConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: bulk_bench DIR [ENTRIES]")?;
    let count: u64 = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let mut cfg = StoreConfig::new(&dir);
    cfg.indexes = ["objectclass", "uid", "cn", "sn", "mail"]
        .map(String::from)
        .to_vec();
    let store = Store::open(cfg)?;
    let started = Instant::now();
    let mut loader = store.bulk_loader()?;
    let base = loader.next_id();
    let suffix = b"dc=com\0dc=example\0".to_vec();
    let people = [&suffix[..], b"ou=people\0"].concat();
    loader.add(
        base,
        &suffix,
        None,
        b"suffix entry",
        &[(0, b"domain".to_vec())],
    )?;
    loader.add(
        base + 1,
        &people,
        Some(base),
        b"ou entry",
        &[(0, b"organizationalunit".to_vec())],
    )?;
    let filler = "x".repeat(450);
    for n in 0..count {
        let id = base + 2 + n;
        let uid = format!("user{n:07}");
        let key = [&people[..], format!("uid={uid}\0").as_bytes()].concat();
        let entry =
            format!("dn: uid={uid},ou=people,dc=example,dc=com\ncn: User {n}\nsn: S{n}\n{filler}");
        let keys = [
            (0, b"person".to_vec()),
            (0, b"inetorgperson".to_vec()),
            (1, uid.clone().into_bytes()),
            (2, format!("user {n}").into_bytes()),
            (3, format!("s{n}").into_bytes()),
            (4, format!("{uid}@example.com").into_bytes()),
        ];
        loader.add(id, &key, Some(base + 1), entry.as_bytes(), &keys)?;
    }
    let stats = loader.finish()?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} entries in {secs:.2} s ({:.0} entries/s), file {} MiB, map {} MiB",
        stats.entries,
        count as f64 / secs,
        stats.file_size >> 20,
        stats.map_size >> 20
    );
    Ok(())
}
