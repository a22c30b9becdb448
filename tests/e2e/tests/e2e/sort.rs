//! Server-side sorting (RFC 2891) and virtual list views with slapd's sssvlv overlay: orders, the
//! refusals, paged sorted results, VLV windows and the per-connection limit, through Debian's
//! `ldapsearch -E sss=...` and python-ldap (`py/sort_vlv.py`); the same tests pass against slapd.

use canopy_e2e::*;

const SLAPD: &str = "overlay sssvlv\nsssvlv-maxkeys 2\nsssvlv-maxperconn 2\n";
const CANOPY: &str = "[[overlay]]\nname = \"sssvlv\"\nmaxkeys = 2\nmaxperconn = 2\n";

const SORT_OID: &str = "1.2.840.113556.1.4.473";
const VLV_OID: &str = "2.16.840.1.113730.3.4.9";

fn sorted_server() -> Server {
    Server::start_with_overlays(SLAPD, CANOPY)
}

/// The uids of the entries an `ldapsearch -LLL` printed, in its order.
fn uids(out: &Out) -> Vec<String> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("dn: uid="))
        .map(|l| l.split(',').next().unwrap_or(l).to_string())
        .collect()
}

fn sorted_search(s: &Server, keys: &str, filter: &str) -> Out {
    s.search(
        &Bind::Anonymous,
        &[
            "-b",
            &format!("ou=people,{SUFFIX}"),
            "-E",
            &format!("!sss={keys}"),
            filter,
            "1.1",
        ],
    )
}

/// Orders: an ordering rule of the attribute's or the request's, reverse order, the least value
/// of a multi-valued attribute in both directions, entries without the attribute last (first when
/// reversed), a second key for the first one's ties.
#[test]
fn sort_orders_as_slapd() {
    let s = sorted_server();
    let ldif = format!(
        "dn: {}\nchangetype: modify\nreplace: description\ndescription: mmm\ndescription: bbb\n\n\
         dn: {}\nchangetype: modify\nreplace: description\ndescription: ccc\n\n\
         dn: {}\nchangetype: modify\nreplace: description\ndescription: aaa\ndescription: zzz\n",
        user_dn("alice"),
        user_dn("bob"),
        user_dn("carol")
    );
    s.modify(&Bind::Root, &ldif).expect_code(0, "descriptions");
    let four = "(|(uid=alice)(uid=bob)(uid=carol)(uid=dave)(uid=erin))";
    for (keys, filter, want) in [
        ("uidNumber", four, "alice bob carol dave erin"),
        ("-uidNumber", four, "erin dave carol bob alice"),
        (
            "uid:caseIgnoreOrderingMatch",
            four,
            "alice bob carol dave erin",
        ),
        (
            "description:caseIgnoreOrderingMatch",
            four,
            "carol alice bob dave erin",
        ),
        (
            "-description:caseIgnoreOrderingMatch",
            four,
            "dave erin bob alice carol",
        ),
        (
            "description:caseIgnoreOrderingMatch/-uidNumber",
            four,
            "carol alice bob erin dave",
        ),
        (
            "sn:caseExactOrderingMatch",
            "(|(uid=jose)(uid=alice)(uid=judy))",
            "alice judy jose",
        ),
    ] {
        let out = sorted_search(&s, keys, filter);
        out.expect_code(0, keys);
        assert_eq!(uids(&out).join(" "), want, "sss={keys}\n{}", out.stdout);
        assert!(
            out.stdout.contains("# sortResult: (0) Success"),
            "{}",
            out.stdout
        );
    }
    // The size limit counts the sorted entries sent.
    let out = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            &format!("ou=people,{SUFFIX}"),
            "-z",
            "2",
            "-E",
            "sss=-uidNumber",
            four,
            "1.1",
        ],
    );
    assert_eq!(out.code, 4, "{}{}", out.stdout, out.stderr);
    assert_eq!(uids(&out).join(" "), "erin dave");
}

/// Refusals, critical or not: an unknown attribute, one without ordering rule (or an unknown
/// rule), more keys than `sssvlv-maxkeys`.
#[test]
fn sort_refusals_as_slapd() {
    let s = sorted_server();
    for (keys, code, text) in [
        (
            "nosuchattr",
            16,
            "serverSort control: Unrecognized attribute type in sort key",
        ),
        ("cn", 18, "serverSort control: No ordering rule"),
        ("-description", 18, "serverSort control: No ordering rule"),
        ("uid:noSuchRule", 18, "serverSort control: No ordering rule"),
        (
            "uidNumber/gidNumber/uid:caseIgnoreOrderingMatch",
            53,
            "Too many sort keys",
        ),
    ] {
        for critical in ["!", ""] {
            let out = s.search(
                &Bind::Anonymous,
                &[
                    "-b",
                    SUFFIX,
                    "-E",
                    &format!("{critical}sss={keys}"),
                    "(uid=*)",
                    "1.1",
                ],
            );
            assert_eq!(out.code, code, "sss={keys}: {}{}", out.stdout, out.stderr);
            assert!(out.stderr.contains(text), "sss={keys}: {}", out.stderr);
            assert!(uids(&out).is_empty());
        }
    }
    // The root DSE is not sorted: a critical control cannot be honoured there.
    let out = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "-E",
            "!sss=uidNumber",
            "(objectClass=*)",
            "1.1",
        ],
    );
    assert_eq!(out.code, 12, "{}{}", out.stdout, out.stderr);
    // The root DSE lists both request controls.
    let dse = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "(objectClass=*)",
            "supportedControl",
        ],
    );
    for oid in [SORT_OID, VLV_OID] {
        assert!(
            dse.stdout.contains(&format!("supportedControl: {oid}\n")),
            "{}",
            dse.stdout
        );
    }
}

/// Without the overlay the controls are unknown: a critical one is refused, a non-critical one
/// ignored (no sort result), and the root DSE does not list them.
#[test]
fn sort_without_the_overlay() {
    let s = Server::start();
    let base = format!("ou=people,{SUFFIX}");
    let out = s.search(
        &Bind::Anonymous,
        &["-b", &base, "-E", "!sss=uidNumber", "(uid=*)", "1.1"],
    );
    assert_eq!(out.code, 12, "{}{}", out.stdout, out.stderr);
    let out = s.search(
        &Bind::Anonymous,
        &["-b", &base, "-E", "sss=-uidNumber", "(uid=*)", "1.1"],
    );
    out.expect_code(0, "non-critical sort without the overlay");
    assert!(!out.stdout.contains("sortResult"), "{}", out.stdout);
    assert!(!uids(&out).is_empty());
    let dse = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            "",
            "-s",
            "base",
            "(objectClass=*)",
            "supportedControl",
        ],
    );
    for oid in [SORT_OID, VLV_OID] {
        assert!(!dse.stdout.contains(oid), "{}", dse.stdout);
    }
}

/// Paged sorted results through ldapsearch: the pages follow the sorted order, each with its sort
/// result and the count of entries left.
#[test]
fn sort_with_paged_results() {
    let s = sorted_server();
    // slapd 2.5's sssvlv may answer a page that arrives before it has put away the previous
    // page's sort with busy ("Other sort requests already in progress").
    let out = reference_retry(
        "sssvlv busy between pages",
        || {
            s.search(
                &Bind::Anonymous,
                &[
                    "-b",
                    &format!("ou=people,{SUFFIX}"),
                    "-E",
                    "!sss=-uidNumber",
                    "-E",
                    "pr=4/noprompt",
                    "(&(objectClass=posixAccount)(uidNumber<=1013))",
                    "1.1",
                ],
            )
        },
        |out| {
            out.code == 51
                && out
                    .stderr
                    .contains("Other sort requests already in progress")
        },
    );
    out.expect_code(0, "paged sorted search");
    assert_eq!(
        uids(&out).join(" "),
        "olivia niaj mallory judy ivan heidi grace frank erin dave carol bob alice"
    );
    assert_eq!(
        out.stdout.matches("# sortResult: (0) Success").count(),
        4,
        "{}",
        out.stdout
    );
    let left: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("# pagedresults: estimate="))
        .map(|l| l.split(' ').next().unwrap_or(l))
        .collect();
    assert_eq!(left, ["9", "5", "1"], "{}", out.stdout);
}

/// VLV windows by offset and by value, VLV's errors, paged sorting and the per-connection limit,
/// through python-ldap (py/sort_vlv.py checks each answer).
#[test]
fn vlv_and_limits_as_slapd() {
    let s = sorted_server();
    s.check_python("sort_vlv.py", "sort_vlv");
}

/// The overlay added live as slapd's cn=config entry (its module loaded first, as slapd needs):
/// sorted searches follow at once, within the entry's limits, on slapd and Canopy alike.
#[test]
fn sssvlv_added_live_through_cn_config() {
    let s = Server::start_with_config_tree();
    let base = format!("ou=people,{SUFFIX}");
    let before = s.search(
        &Bind::Anonymous,
        &["-b", &base, "-E", "!sss=uidNumber", "(uid=*)", "1.1"],
    );
    assert_eq!(before.code, 12, "{}{}", before.stdout, before.stderr);
    s.modify(
        &Bind::External,
        "dn: cn=module{0},cn=config\nchangetype: modify\nadd: olcModuleLoad\nolcModuleLoad: sssvlv\n",
    )
    .expect_code(0, "load the module");
    s.add(
        &Bind::External,
        "dn: olcOverlay=sssvlv,olcDatabase={1}mdb,cn=config\nobjectClass: olcOverlayConfig\n\
         objectClass: olcSssVlvConfig\nolcOverlay: sssvlv\nolcSssVlvMaxKeys: 1\n",
    )
    .expect_code(0, "add the sssvlv overlay");
    let filter = "(|(uid=alice)(uid=bob)(uid=carol))";
    let out = s.search(
        &Bind::Anonymous,
        &["-b", &base, "-E", "!sss=-uidNumber", filter, "1.1"],
    );
    out.expect_code(0, "sorted after the overlay was added");
    assert_eq!(uids(&out).join(" "), "carol bob alice");
    let out = s.search(
        &Bind::Anonymous,
        &[
            "-b",
            &base,
            "-E",
            "!sss=uidNumber/uid:caseIgnoreOrderingMatch",
            filter,
            "1.1",
        ],
    );
    assert_eq!(
        out.code, 53,
        "olcSssVlvMaxKeys: 1: {}{}",
        out.stdout, out.stderr
    );
}
