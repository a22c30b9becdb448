//! Dynamic entries (RFC 2589): slapd's dds overlay and the Refresh extended operation
//! (tests/e2e/py/dds.py), configured alike on both servers.

use std::path::Path;

use canopy_e2e::*;

fn start() -> Server {
    start_with(
        "dds-max-ttl 86400\ndds-min-ttl 2\ndds-default-ttl 600\n\
         dds-interval 1\ndds-tolerance 0\ndds-max-dynamicObjects 4\n",
        "max-ttl = 86400\nmin-ttl = 2\ndefault-ttl = 600\n\
         interval = 1\ntolerance = 0\nmax-dynamicObjects = 4\n",
    )
}

/// A server whose main database has the dds overlay with `slapd` (directives) or `canopy`
/// (TOML options) as its settings.
fn start_with(slapd: &str, canopy: &str) -> Server {
    let target = Target::from_env();
    let server = match target {
        Target::Slapd => {
            let conf = canopy_harness::slapd_conf::render_with_overlays(
                Path::new("@DIR@"),
                Path::new("@DIR@/data"),
                &format!("overlay dds\n{slapd}"),
            );
            Server::start_configured(target, &conf, &["data"], &[])
        }
        Target::Canopy => Server::start_configured(
            target,
            &format!("[[overlay]]\nname = \"dds\"\n{canopy}"),
            &[],
            &[],
        ),
    };
    server.load_base();
    server
}

#[test]
fn dynamic_entries() {
    let s = start();
    let out = s.python("dds.py", &[]);
    assert_eq!(
        out.code, 0,
        "dds.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new("dds");
    t.raw("dds.py", &out);
    // The Refresh operation is offered; the schema of dynamic entries, as published.
    let dse = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "(objectClass=*)",
            "supportedExtension",
        ],
    );
    let refresh: Vec<String> = dse.records()[0]
        .values("supportedExtension")
        .into_iter()
        .filter(|oid| oid.starts_with("1.3.6.1.4.1.1466.101.119"))
        .collect();
    t.text("root DSE", &format!("supportedExtension: {refresh:?}"));
    let schema = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "cn=Subschema",
            "-s",
            "base",
            "(objectClass=*)",
            "attributeTypes",
            "objectClasses",
        ],
    );
    let records = schema.records();
    let defs: Vec<String> = ["attributeTypes", "objectClasses"]
        .iter()
        .flat_map(|attr| records[0].values(attr))
        .filter(|def| {
            // slapd keeps entryExpireTimestamp out of cn=Subschema; Canopy lists it.
            ["entryTtl", "dynamicSubtrees", "dynamicObject"]
                .iter()
                .any(|name| def.contains(&format!("'{name}'")))
                // The overlay's cn=config names (olcDDS*), as its module defines them.
                || def.contains("NAME 'olcDDS")
        })
        .collect();
    t.text("schema", &defs.join("\n"));
    t.check();
}

/// `dds-state FALSE`: dynamic entries are refused, and so is a Refresh.
#[test]
fn disabled() {
    let s = start_with("dds-state FALSE\n", "state = false\n");
    let out = s.python("dds.py", &["disabled"]);
    assert_eq!(
        out.code, 0,
        "dds.py failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let mut t = Transcript::new("dds_disabled");
    t.raw("dds.py disabled", &out);
    t.check();
}
