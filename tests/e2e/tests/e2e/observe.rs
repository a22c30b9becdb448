//! Watching the server work: cn=Monitor read with ldapsearch (back-monitor's shape on both servers,
//! exact counts on canopy), `/metrics` scraped over HTTP and parsed by the Prometheus client library's
//! parser, the access log (one line per operation, no secret, reopened on SIGHUP) and the auditlog
//! overlay's LDIF (both servers).

use std::process::Command;

use canopy_e2e::tempdir::TempDir;
use canopy_e2e::*;

/// The ldapi peer running as root, after SASL EXTERNAL: slapd's name for it.
const ROOT_PEER: &str = "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth";

/// slapd needs `database monitor` and rules like canopy's built-in ones (its root DN is the main
/// database's, so it is named); canopy serves cn=Monitor by default.
fn start_with_monitor() -> Server {
    let slapd = format!(
        "database monitor\naccess to * by dn.exact=\"{ROOT_DN}\" read by dn.exact=\"{ROOT_PEER}\" read by * none\n"
    );
    Server::start_with_overlays(&slapd, "")
}

/// One attribute of one monitor entry, as the root DN reads it.
fn monitor_value(s: &Server, dn: &str, attr: &str) -> u64 {
    let out = s.read(&Bind::Root, dn, &[attr]);
    out.expect_code(0, dn);
    let records = out.records();
    let values = records.first().map(|r| r.values(attr)).unwrap_or_default();
    let value = values
        .first()
        .unwrap_or_else(|| panic!("{dn} has no {attr}:\n{}", out.stdout));
    value
        .parse()
        .unwrap_or_else(|_| panic!("{dn} {attr}: not a number: {value}"))
}

fn ops(s: &Server, op: &str, attr: &str) -> u64 {
    monitor_value(s, &format!("cn={op},cn=Operations,cn=Monitor"), attr)
}

const THREE_ENTRIES: &str =
    "dn: ou=mon1,dc=example,dc=com\nobjectClass: organizationalUnit\nou: mon1\n\n\
dn: ou=mon2,dc=example,dc=com\nobjectClass: organizationalUnit\nou: mon2\n\n\
dn: ou=mon3,dc=example,dc=com\nobjectClass: organizationalUnit\nou: mon3\n";

#[test]
fn monitor_has_back_monitor_shape_and_follows_operations() {
    let s = start_with_monitor();
    let target = Target::from_env();

    // The tree: containers and counters where monitoring scripts look for them.
    let all = s.search(
        &Bind::Root,
        &["-b", "cn=Monitor", "(objectClass=*)", "*", "+"],
    );
    all.expect_code(0, "reading cn=Monitor as the root DN");
    let dns: Vec<String> = all
        .records()
        .iter()
        .map(|r| r.dn().to_ascii_lowercase())
        .collect();
    for dn in [
        "cn=monitor",
        "cn=backends,cn=monitor",
        "cn=connections,cn=monitor",
        "cn=total,cn=connections,cn=monitor",
        "cn=current,cn=connections,cn=monitor",
        "cn=databases,cn=monitor",
        "cn=listeners,cn=monitor",
        "cn=operations,cn=monitor",
        "cn=search,cn=operations,cn=monitor",
        "cn=add,cn=operations,cn=monitor",
        "cn=overlays,cn=monitor",
        "cn=statistics,cn=monitor",
        "cn=bytes,cn=statistics,cn=monitor",
        "cn=pdu,cn=statistics,cn=monitor",
        "cn=entries,cn=statistics,cn=monitor",
        "cn=referrals,cn=statistics,cn=monitor",
        "cn=threads,cn=monitor",
        "cn=time,cn=monitor",
        "cn=start,cn=time,cn=monitor",
        "cn=current,cn=time,cn=monitor",
        "cn=uptime,cn=time,cn=monitor",
    ] {
        assert!(dns.iter().any(|d| d == dn), "{dn} missing from:\n{dns:#?}");
    }
    // Counters are operational: `*` alone does not show them, naming them does.
    let plain = s.read(&Bind::Root, "cn=Total,cn=Connections,cn=Monitor", &[]);
    assert!(
        !plain.stdout.contains("monitorCounter:"),
        "{}",
        plain.stdout
    );
    assert!(monitor_value(&s, "cn=Total,cn=Connections,cn=Monitor", "monitorCounter") >= 1);
    // Filters on monitor attributes go through the ordinary filter code.
    let found = s.search(
        &Bind::Root,
        &[
            "-b",
            "cn=Statistics,cn=Monitor",
            "(&(objectClass=monitorCounterObject)(monitorCounter>=1))",
            "1.1",
        ],
    );
    found.expect_code(0, "filtering on monitorCounter");
    let found: Vec<String> = found
        .records()
        .iter()
        .map(|r| r.dn().to_ascii_lowercase())
        .collect();
    assert!(
        found.contains(&"cn=bytes,cn=statistics,cn=monitor".to_string()),
        "{found:?}"
    );
    assert!(
        !found.contains(&"cn=referrals,cn=statistics,cn=monitor".to_string()),
        "{found:?}"
    );
    // The reading connection is there, with its bind DN.
    let me = s.search(
        &Bind::Root,
        &[
            "-b",
            "cn=Connections,cn=Monitor",
            &format!("(monitorConnectionAuthzDN={ROOT_DN})"),
            "monitorConnectionOpsReceived",
        ],
    );
    me.expect_code(0, "finding one's own connection");
    assert_eq!(me.records().len(), 1, "{}", me.stdout);

    // Known operations move the counters.
    let adds = ops(&s, "Add", "monitorOpCompleted");
    let modifies = ops(&s, "Modify", "monitorOpInitiated");
    let total = monitor_value(&s, "cn=Total,cn=Connections,cn=Monitor", "monitorCounter");
    s.add(&Bind::Root, THREE_ENTRIES)
        .expect_code(0, "three adds");
    s.modify(
        &Bind::Root,
        "dn: ou=mon1,dc=example,dc=com\nchangetype: modify\nreplace: description\ndescription: x\n",
    )
    .expect_code(0, "a modify");
    let adds_after = ops(&s, "Add", "monitorOpCompleted");
    let modifies_after = ops(&s, "Modify", "monitorOpInitiated");
    let total_after = monitor_value(&s, "cn=Total,cn=Connections,cn=Monitor", "monitorCounter");
    if target == Target::Canopy {
        assert_eq!(adds_after, adds + 3, "adds completed");
        assert_eq!(modifies_after, modifies + 1, "modifies initiated");
        // Between the two reads: the add, the modify, two reads of operations, and this read.
        assert_eq!(total_after, total + 5, "connections accepted");
        // The earlier tools' connections close asynchronously: wait until only this reader is left.
        let current = (0..50)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                monitor_value(&s, "cn=Current,cn=Connections,cn=Monitor", "monitorCounter")
            })
            .find(|&n| n == 1);
        assert_eq!(current, Some(1), "open connections besides the reader");
        // The reading search counts itself as initiated, not yet completed (as slapd does).
        let search = s.read(
            &Bind::Root,
            "cn=Search,cn=Operations,cn=Monitor",
            &["monitorOpInitiated", "monitorOpCompleted"],
        );
        let record = &search.records()[0];
        let initiated: u64 = record.values("monitorOpInitiated")[0].parse().unwrap();
        let completed: u64 = record.values("monitorOpCompleted")[0].parse().unwrap();
        assert_eq!(initiated, completed + 1, "{}", search.stdout);
        let db = s.read(&Bind::Root, "cn=Database 0,cn=Databases,cn=Monitor", &["+"]);
        let db = &db.records()[0];
        assert_eq!(db.values("namingContexts"), [SUFFIX]);
        let entries: u64 = db.values("olmMDBEntries")[0].parse().unwrap();
        assert_eq!(entries, 27 + 3, "base.ldif and the three adds");
        assert!(
            !db.values("olmMDBPagesUsed").is_empty() && !db.values("monitorTimestamp").is_empty()
        );
        assert!(dns.iter().any(|d| d == "cn=replication,cn=monitor"));
    } else {
        assert!(adds_after >= adds + 3 && modifies_after > modifies && total_after > total);
    }

    // Clients cannot write it.
    let add = s.add(
        &Bind::Root,
        "dn: cn=foo,cn=Monitor\nobjectClass: monitorContainer\ncn: foo\n",
    );
    assert_eq!(add.code, 53, "adding under cn=Monitor: {}", add.stderr);
    let delete = s.tool(
        "ldapdelete",
        &Bind::Root,
        &["cn=Uptime,cn=Time,cn=Monitor"],
        None,
    );
    assert_eq!(
        delete.code, 53,
        "deleting a monitor entry: {}",
        delete.stderr
    );
    let rename = s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &["cn=Uptime,cn=Time,cn=Monitor", "cn=Up"],
        None,
    );
    assert_eq!(
        rename.code, 53,
        "renaming a monitor entry: {}",
        rename.stderr
    );
}

/// cn=Monitor under access rules of its own (slapd's `access` lines of `database monitor`,
/// Canopy's `monitor_access`): here users read it, anonymous clients do not.
#[test]
fn monitor_under_configured_rules() {
    let rule = "to * by users read by * none";
    let s = Server::start_with_overlays(
        &format!("database monitor\naccess {rule}\n"),
        &format!("monitor_access = ['''{rule}''']\n"),
    );
    let base = ["-b", "cn=Monitor", "-s", "base", "(objectClass=*)", "1.1"];
    let user = s.search(&Bind::user("alice"), &base);
    user.expect_code(0, "a user reads cn=Monitor");
    assert_eq!(user.records().len(), 1, "{}", user.stdout);
    let anonymous = s.search(&Bind::Anonymous, &base);
    assert!(
        anonymous.code == 32 || (anonymous.code == 0 && anonymous.records().is_empty()),
        "anonymous reads cn=Monitor: {} {}",
        anonymous.code,
        anonymous.stdout
    );
}

#[test]
fn monitor_is_for_the_root_dn_and_the_root_peer_only() {
    let s = start_with_monitor();
    for bind in [Bind::Anonymous, Bind::user("alice")] {
        let out = s.search(&bind, &["-b", "cn=Monitor", "(objectClass=*)", "*", "+"]);
        assert!(
            out.code == 32 || (out.code == 0 && out.records().is_empty()),
            "{bind:?} reads cn=Monitor: {} {}",
            out.code,
            out.stdout
        );
    }
    let peer = s.search(
        &Bind::External,
        &["-b", "cn=Monitor", "-s", "base", "(objectClass=*)"],
    );
    peer.expect_code(0, "the ldapi root peer reads cn=Monitor");
    assert_eq!(peer.records().len(), 1, "{}", peer.stdout);
    let dse = s.read(&Bind::Anonymous, "", &["monitorContext", "namingContexts"]);
    assert_eq!(dse.records()[0].values("monitorContext"), ["cn=Monitor"]);
    assert_eq!(dse.records()[0].values("namingContexts"), [SUFFIX]);
}

#[test]
fn monitor_can_be_turned_off() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: `monitor = false` is canopy's setting");
        return;
    }
    let s = Server::start_canopy_with_config("monitor = false\n");
    let out = s.search(
        &Bind::Root,
        &["-b", "cn=Monitor", "-s", "base", "(objectClass=*)"],
    );
    assert_eq!(out.code, 32, "{}", out.stdout);
    let dse = s.read(&Bind::Anonymous, "", &["monitorContext"]);
    assert!(
        dse.records()[0].values("monitorContext").is_empty(),
        "{}",
        dse.stdout
    );
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Scrapes `url` with python's urllib and parses the text with prometheus_client's parser; prints
/// `name{labels} value` per sample, labels sorted, and `TYPE name type` per family.
fn scrape(url: &str) -> String {
    let script = format!(
        r#"
import urllib.request
from prometheus_client.parser import text_string_to_metric_families
with urllib.request.urlopen("{url}", timeout=10) as r:
    assert r.status == 200, r.status
    assert r.headers["Content-Type"].startswith("text/plain"), r.headers["Content-Type"]
    text = r.read().decode()
for family in text_string_to_metric_families(text):
    print("TYPE", family.name, family.type)
    for s in family.samples:
        labels = ",".join(f'{{k}}="{{v}}"' for k, v in sorted(s.labels.items()))
        print(f"{{s.name}}{{{{{{labels}}}}}} {{s.value}}")
"#
    );
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(&script)
        .output()
        .expect("running /usr/bin/python3 (apt-get install python3-prometheus-client)");
    assert!(
        out.status.success(),
        "scrape failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sample(scraped: &str, name_and_labels: &str) -> f64 {
    scraped
        .lines()
        .find_map(|l| {
            l.strip_prefix(name_and_labels)?
                .strip_prefix(' ')?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no sample {name_and_labels} in:\n{scraped}"))
}

#[test]
fn metrics_count_known_operations_exactly() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: /metrics is canopy's");
        return;
    }
    let port = free_port();
    let s = Server::start_canopy_with_config(&format!("metrics_listen = \"127.0.0.1:{port}\"\n"));
    let url = format!("http://127.0.0.1:{port}/metrics");
    let before = scrape(&url);
    let adds = sample(&before, "canopy_operations_total{code=\"0\",op=\"add\"}");
    assert_eq!(adds, 27.0, "base.ldif's adds");

    s.add(&Bind::Root, THREE_ENTRIES)
        .expect_code(0, "three adds");
    for _ in 0..2 {
        let out = s.whoami(Via::Ldap, &Bind::Simple(user_dn("alice"), "wrong".into()));
        assert_eq!(out.code, 49);
    }
    s.search(&Bind::Root, &["-b", SUFFIX, "(ou=mon*)", "1.1"])
        .expect_code(0, "a search returning three entries");
    s.add(
        &Bind::Root,
        "dn: ou=mon1,dc=example,dc=com\nobjectClass: organizationalUnit\nou: mon1\n",
    );

    let after = scrape(&url);
    let get = |k: &str| sample(&after, k);
    assert_eq!(get("canopy_operations_total{code=\"0\",op=\"add\"}"), 30.0);
    assert_eq!(get("canopy_operations_total{code=\"68\",op=\"add\"}"), 1.0);
    assert_eq!(get("canopy_operations_total{code=\"49\",op=\"bind\"}"), 2.0);
    assert_eq!(get("canopy_bind_failures_total{}"), 2.0);
    assert_eq!(
        get("canopy_search_entries_sent_total{}")
            - sample(&before, "canopy_search_entries_sent_total{}"),
        3.0
    );
    assert_eq!(
        get("canopy_operation_duration_seconds_count{op=\"add\"}"),
        31.0
    );
    assert_eq!(
        get("canopy_operation_duration_seconds_bucket{le=\"+Inf\",op=\"add\"}"),
        31.0
    );
    assert!(
        after.contains("TYPE canopy_operation_duration_seconds histogram"),
        "{after}"
    );
    assert!(
        after.contains("TYPE canopy_group_commit_seconds histogram"),
        "{after}"
    );
    assert!(get("canopy_group_commit_size_count{suffix=\"dc=example,dc=com\"}") >= 1.0);
    assert_eq!(get("canopy_entries{suffix=\"dc=example,dc=com\"}"), 30.0);
    assert!(get("canopy_lmdb_map_size_bytes{suffix=\"dc=example,dc=com\"}") > 0.0);
    assert!(get("canopy_lmdb_pages_used{suffix=\"dc=example,dc=com\"}") > 0.0);
    // Connections: every tool run is one; none is open while python scrapes.
    let accepted = get("canopy_connections_accepted_total{}")
        - sample(&before, "canopy_connections_accepted_total{}");
    assert_eq!(accepted, 5.0, "one add, two binds, one search, one add");
    // The tools' connections close asynchronously after they exit.
    let closed = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        sample(&scrape(&url), "canopy_connections_current{}") == 0.0
    });
    assert!(closed, "connections left open:\n{after}");

    // Every series contrib/grafana-dashboard.json queries exists.
    let dashboard = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/grafana-dashboard.json");
    let dashboard = std::fs::read_to_string(&dashboard).expect("contrib/grafana-dashboard.json");
    let samples: Vec<&str> = after.lines().filter_map(|l| l.split('{').next()).collect();
    let mut queried = 0;
    for (at, _) in dashboard.match_indices("canopy_") {
        let name: String = dashboard[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name == "canopy_ldap" {
            continue; // the dashboard's uid
        }
        queried += 1;
        assert!(
            samples.contains(&name.as_str()),
            "the dashboard queries {name}, which /metrics lacks"
        );
    }
    assert!(queried >= 15, "the dashboard queries {queried} series");
}

#[test]
fn metrics_follow_databases_added_live() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: /metrics is canopy's");
        return;
    }
    let port = free_port();
    let s = Server::start_canopy_with_config(&format!(
        "metrics_listen = \"127.0.0.1:{port}\"\nconfig_root_dn = \"{CONFIG_ROOT_DN}\"\n\
         config_root_password = \"{CONFIG_ROOT_PW}\"\n"
    ));
    let url = format!("http://127.0.0.1:{port}/metrics");
    let live = "canopy_entries{suffix=\"dc=live,dc=org\"}";
    assert!(!scrape(&url).contains(live), "no such database yet");
    let directory = s.dir().join("live-db");
    std::fs::create_dir_all(&directory).unwrap();
    let admin = Bind::Simple(CONFIG_ROOT_DN.into(), CONFIG_ROOT_PW.into());
    s.add(
        &admin,
        &format!(
            "dn: olcDatabase={{2}}mdb,cn=config\nobjectClass: olcDatabaseConfig\n\
             objectClass: olcMdbConfig\nolcDatabase: {{2}}mdb\nolcSuffix: dc=live,dc=org\n\
             olcDbDirectory: {}\nolcRootDN: cn=boss,dc=live,dc=org\nolcRootPW: boss-pw\n",
            directory.display()
        ),
    )
    .expect_code(0, "add a database live");
    s.add(
        &Bind::Simple("cn=boss,dc=live,dc=org".into(), "boss-pw".into()),
        "dn: dc=live,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: live\ndc: live\n",
    )
    .expect_code(0, "its root DN fills it");
    let after = scrape(&url);
    assert_eq!(sample(&after, live), 1.0, "the new database's entry");
    let begun = "canopy_lmdb_read_txns_begun_total{suffix=\"dc=live,dc=org\"}";
    assert!(
        sample(&after, begun) >= 1.0,
        "its reads began a transaction"
    );
    let idle = "canopy_lmdb_read_txns_idle{suffix=\"dc=live,dc=org\"}";
    assert!(sample(&after, idle) <= 8.0, "a few idle snapshots at most");
    assert!(
        sample(&after, "canopy_entries{suffix=\"dc=example,dc=com\"}") > 1.0,
        "the first database is still there:\n{after}"
    );
    s.tool(
        "ldapdelete",
        &admin,
        &["olcDatabase={2}mdb,cn=config"],
        None,
    )
    .expect_code(0, "delete the database added live");
    assert!(
        !scrape(&url).contains(live),
        "a database deleted live leaves /metrics"
    );
}

/// Access-log lines naming operation `word` (`SRCH`, `ADD`, ...), leaving out the harness's
/// readiness probe (an anonymous root DSE search on its own connection).
fn lines_of<'a>(log: &'a str, word: &str) -> Vec<&'a str> {
    let probes: Vec<String> = log
        .lines()
        .filter(|l| l.contains(" SRCH dn=\"\" "))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("conn=")))
        .map(|c| format!(" {c} "))
        .collect();
    log.lines()
        .filter(|l| l.contains(" op=") && l.contains(&format!(" {word} ")))
        .filter(|l| !probes.iter().any(|p| l.contains(p.as_str())))
        .collect()
}

fn hangup(s: &Server) {
    let pid = s.pid().expect("running").to_string();
    let status = Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// Waits (bounded) until `path` exists and holds `needle`.
fn wait_for(path: &std::path::Path, needle: &str) -> String {
    wait_until(path, needle, |text| text.contains(needle))
}

/// Waits (bounded) until the text of `path` satisfies `done` (`what` names the wait in a failure).
fn wait_until(path: &std::path::Path, what: &str, done: impl Fn(&str) -> bool) -> String {
    for _ in 0..50 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if done(&text) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{} never held {what:?}", path.display());
}

/// An access log in which every accepted connection has closed, and `needle` appears.
fn settled(text: &str, needle: &str) -> bool {
    text.contains(needle) && text.matches(" ACCEPT ").count() == text.matches(" closed ").count()
}

#[test]
fn access_log_has_one_line_per_operation_and_reopens() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: the access log is canopy's");
        return;
    }
    let logs = TempDir::new("access");
    let path = logs.path().join("access.log");
    let s = Server::start_canopy_with_config(&format!(
        "access_log = {:?}\n",
        path.display().to_string()
    ));
    let secret = "Marker-Access-31f7";
    s.add(
        &Bind::Root,
        &format!("dn: uid=acc,{SUFFIX}\nobjectClass: inetOrgPerson\nuid: acc\ncn: A\nsn: A\nuserPassword: {secret}\n"),
    )
    .expect_code(0, "add");
    let bind = Bind::Simple(format!("uid=acc,{SUFFIX}"), secret.into());
    s.search(&bind, &["-b", SUFFIX, "(uid=acc)", "1.1"])
        .expect_code(0, "search");
    s.tool(
        "ldapcompare",
        &Bind::Root,
        &[
            &format!("uid=acc,{SUFFIX}"),
            &format!("userPassword:{secret}"),
        ],
        None,
    );
    s.tool(
        "ldapmodrdn",
        &Bind::Root,
        &[&format!("uid=acc,{SUFFIX}"), "uid=acc2"],
        None,
    )
    .expect_code(0, "modrdn");
    s.tool(
        "ldapdelete",
        &Bind::Root,
        &[&format!("uid=acc2,{SUFFIX}")],
        None,
    )
    .expect_code(0, "delete");

    // The clients have gone: every connection's lines are in.
    let log = wait_until(&path, "DEL, all connections closed", |t| {
        settled(t, " DEL ")
    });
    assert!(
        !log.contains(secret),
        "the access log holds the password:\n{log}"
    );
    assert!(!log.contains('\u{1b}'), "colour codes in a log file");
    // base.ldif's load and the five tools: each a bind, its operation and an unbind.
    assert_eq!(lines_of(&log, "ADD").len(), 28, "{log}");
    assert_eq!(lines_of(&log, "BIND").len(), 6, "{log}");
    assert_eq!(lines_of(&log, "UNBIND").len(), 6, "{log}");
    let search = lines_of(&log, "SRCH");
    assert_eq!(search.len(), 1, "{log}");
    for needle in [
        "scope=\"2\"",
        "filter=\"(uid=acc)\"",
        "err=0",
        "nentries=1",
        "peer=\"IP=127.0.0.1:",
        &format!("authz=\"uid=acc,{SUFFIX}\""),
    ] {
        assert!(
            search[0].contains(needle),
            "{needle} missing in {}",
            search[0]
        );
    }
    assert_eq!(lines_of(&log, "CMP").len(), 1);
    assert!(lines_of(&log, "MODRDN")[0].contains("newrdn=\"uid=acc2\""));
    assert!(lines_of(&log, "DEL")[0].contains("err=0"));
    // Every operation line is unique by (conn, op).
    let mut ids: Vec<(String, String)> = log
        .lines()
        .filter(|l| l.contains(" op="))
        .map(|l| {
            let field = |k: &str| {
                l.split_whitespace()
                    .find(|w| w.starts_with(k))
                    .unwrap_or("")
                    .to_string()
            };
            (field("conn="), field("op="))
        })
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate conn/op pairs");

    // logrotate: move the file away, SIGHUP, and the next lines go to a new file of the same name.
    let moved = logs.path().join("access.log.1");
    std::fs::rename(&path, &moved).expect("moving the log");
    hangup(&s);
    std::thread::sleep(std::time::Duration::from_millis(300));
    s.search(
        &Bind::Root,
        &["-b", SUFFIX, "-s", "base", "(objectClass=*)", "1.1"],
    )
    .expect_code(0, "search after the reopen");
    let fresh = wait_until(&path, "SRCH, all connections closed", |t| {
        settled(t, " SRCH ")
    });
    assert_eq!(lines_of(&fresh, "SRCH").len(), 1, "{fresh}");
    let old = std::fs::read_to_string(&moved).unwrap_or_default();
    assert_eq!(
        lines_of(&old, "SRCH").len(),
        1,
        "the moved file got no new lines"
    );
}

#[test]
fn access_log_as_json_lines() {
    if Target::from_env() == Target::Slapd {
        println!("skipped for slapd: the access log is canopy's");
        return;
    }
    let logs = TempDir::new("access-json");
    let path = logs.path().join("access.json");
    let s = Server::start_canopy_with_config(&format!(
        "access_log = {:?}\nlog_format = \"json\"\n",
        path.display().to_string()
    ));
    s.search(&Bind::Root, &["-b", SUFFIX, "(uid=alice)", "1.1"])
        .expect_code(0, "search");
    let log = wait_until(&path, "search, all connections closed", |t| {
        t.contains("\"search\"")
            && t.matches("\"ACCEPT\"").count() == t.matches("\"closed\"").count()
    });
    let script = r#"
import json, sys
ops = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
probes = {o["conn"] for o in ops if o.get("type") == "search" and o["dn"] == ""}
ops = [o for o in ops if o["conn"] not in probes]
searches = [o for o in ops if o.get("type") == "search"]
assert len(searches) == 1, searches
s = searches[0]
assert s["nentries"] == 1 and s["err"] == 0 and s["filter"] == "(uid=alice)" and s["scope"] == "2", s
assert s["authz"] == "cn=admin,dc=example,dc=com", s
print(len([o for o in ops if "op" in o]))
"#;
    let out = Command::new("/usr/bin/python3")
        .args(["-c", script, &path.display().to_string()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}\n{log}",
        String::from_utf8_lossy(&out.stderr)
    );
    // base.ldif's load (bind, 27 adds, unbind) and the search (bind, search, unbind).
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "32");
}

/// Records of an audit file: (what, dn) of each, from `# what` headers and `dn:` lines.
fn audit_records(text: &str) -> Vec<(String, String, String)> {
    text.split("\n\n")
        .filter(|r| r.trim_start().starts_with("# "))
        .map(|r| {
            let r = r.trim_start();
            let what = r
                .trim_start_matches("# ")
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            let dn = r
                .lines()
                .find_map(|l| l.strip_prefix("dn: "))
                .unwrap_or("")
                .to_string();
            (what, dn, r.to_string())
        })
        .collect()
}

#[test]
fn auditlog_records_every_change_as_ldif() {
    let logs = TempDir::new("audit");
    // slapd writes as the user it runs as; the directory must let it.
    let path = logs.path().join("audit.ldif");
    let file = path.display().to_string();
    let s = Server::start_with_overlays(
        &format!("overlay auditlog\nauditlog {file}\n"),
        &format!("[[overlay]]\nname = \"auditlog\"\nfile = {file:?}\n"),
    );
    let dn = format!("ou=audit,{SUFFIX}");
    s.add(
        &Bind::Root,
        &format!("dn: {dn}\nobjectClass: organizationalUnit\nou: audit\n"),
    )
    .expect_code(0, "add");
    s.modify(
        &Bind::Root,
        &format!("dn: {dn}\nchangetype: modify\nreplace: description\ndescription: audited\n"),
    )
    .expect_code(0, "modify");
    // A refused change is never logged.
    let refused = s.add(
        &Bind::Root,
        &format!("dn: {dn}\nobjectClass: organizationalUnit\nou: audit\n"),
    );
    assert_eq!(refused.code, 68);
    s.tool("ldapmodrdn", &Bind::Root, &["-r", &dn, "ou=audited"], None)
        .expect_code(0, "modrdn");
    s.tool(
        "ldapdelete",
        &Bind::Root,
        &[&format!("ou=audited,{SUFFIX}")],
        None,
    )
    .expect_code(0, "delete");

    let text = wait_for(&path, "# end delete");
    let records = audit_records(&text);
    assert_eq!(
        records.len(),
        27 + 4,
        "base.ldif's adds and four changes:\n{text}"
    );
    let last: Vec<(&str, &str)> = records[27..]
        .iter()
        .map(|(w, d, _)| (w.as_str(), d.as_str()))
        .collect();
    let renamed = format!("ou=audited,{SUFFIX}");
    assert_eq!(
        last,
        [
            ("add", dn.as_str()),
            ("modify", dn.as_str()),
            ("modrdn", dn.as_str()),
            ("delete", renamed.as_str())
        ]
    );
    let (_, _, add) = &records[27];
    assert!(
        add.starts_with("# add ") && add.contains(&format!(" {ROOT_DN}\n")),
        "{add}"
    );
    assert!(
        add.contains("changetype: add\n")
            && add.contains("ou: audit\n")
            && add.contains("\nentryUUID: "),
        "{add}"
    );
    assert!(
        add.trim_end()
            .lines()
            .last()
            .unwrap_or("")
            .starts_with("# end add "),
        "{add}"
    );
    let (_, _, modify) = &records[28];
    assert!(
        modify.contains("changetype: modify\nreplace: description\ndescription: audited\n-\n"),
        "{modify}"
    );
    let (_, _, rename) = &records[29];
    assert!(
        rename.contains("changetype: modrdn\nnewrdn: ou=audited\ndeleteoldrdn: 1\n"),
        "{rename}"
    );

    if s.target == Target::Canopy {
        // SIGHUP reopens the audit file too.
        let moved = logs.path().join("audit.ldif.1");
        std::fs::rename(&path, &moved).expect("moving the audit log");
        hangup(&s);
        std::thread::sleep(std::time::Duration::from_millis(300));
        s.add(
            &Bind::Root,
            &format!("dn: {dn}\nobjectClass: organizationalUnit\nou: audit\n"),
        )
        .expect_code(0, "add after the reopen");
        let fresh = wait_for(&path, "# end add");
        assert_eq!(audit_records(&fresh).len(), 1, "{fresh}");
    }
}
