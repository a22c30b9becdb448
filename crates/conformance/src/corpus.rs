//! The hand-written corpus format (tests/conformance/README.md): one `search`, `compare` or `bind`
//! line per case, and LDIF change records (optionally after a `change` line) for writes, each
//! write followed by an automatic read-back search of the entry it touched.

use crate::case::{Case, ChangeRecord, Identity, Request};
use base64::Engine as _;
use canopy_proto::{
    CompareRequest, Control, DerefAliases, Dn, Filter, LdifChange, LdifReader, LdifRecord,
    SearchRequest, SearchScope,
};
use std::collections::BTreeMap;
use std::path::Path;

/// The suffix both servers hold; the default search base.
pub const SUFFIX: &str = canopy_harness::SUFFIX;
/// RFC 3296 ManageDsaIT.
pub const MANAGE_DSA_IT: &str = "2.16.840.1.113730.3.4.2";
/// RFC 4528 assertion control.
pub const ASSERTION: &str = "1.3.6.1.1.12";
/// RFC 3876 Matched Values (a values return filter).
pub const VALUES_RETURN: &str = "1.2.826.0.1.3344810.2.3";
/// RFC 4527 pre-read and post-read controls.
pub const PRE_READ: &str = "1.3.6.1.1.13.1";
pub const POST_READ: &str = "1.3.6.1.1.13.2";
/// RFC 4370 proxied authorization.
pub const PROXY_AUTHZ: &str = "2.16.840.1.113730.3.4.18";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{origin}: {reason}")]
pub struct CorpusError {
    pub origin: String,
    pub reason: String,
}

/// Reads every `*.corpus` file of `path` (a file or a directory, files in name order).
pub fn load(path: &Path) -> Result<Vec<Case>, CorpusError> {
    let io_err = |e: std::io::Error| CorpusError {
        origin: path.display().to_string(),
        reason: e.to_string(),
    };
    let mut files = Vec::new();
    if path.is_dir() {
        for entry in std::fs::read_dir(path).map_err(io_err)? {
            let p = entry.map_err(io_err)?.path();
            if p.extension().is_some_and(|e| e == "corpus") {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(io_err)?;
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        cases.extend(parse(&name, &text)?);
    }
    Ok(cases)
}

/// Parses one corpus file's text; `name` prefixes every case's origin.
pub fn parse(name: &str, text: &str) -> Result<Vec<Case>, CorpusError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while let Some(raw) = lines.get(i) {
        let line_no = i + 1;
        let origin = format!("{name}:{line_no}");
        let err = |reason: String| CorpusError {
            origin: origin.clone(),
            reason,
        };
        let line = raw.trim_end();
        i += 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
        match verb {
            "search" | "compare" | "bind" | "exop" | "saslbind" => {
                let kv = tokenize(rest).map_err(err)?;
                let case = match verb {
                    "search" => search_case(&origin, kv),
                    "compare" => compare_case(&origin, kv),
                    "exop" => exop_case(&origin, kv),
                    "saslbind" => sasl_bind_case(&origin, kv),
                    _ => bind_case(&origin, kv),
                }
                .map_err(err)?;
                cases.push(case);
            }
            "change" | "dn:" | "dn::" => {
                let mut kv = if verb == "change" {
                    tokenize(rest).map_err(err)?
                } else {
                    i -= 1;
                    BTreeMap::new()
                };
                let identity = identity(kv.remove("as"), Identity::Root).map_err(err)?;
                let controls = controls(&mut kv).map_err(err)?;
                let readback = kv.remove("readback").unwrap_or_default() != b"0";
                no_leftovers(&kv).map_err(err)?;
                let start = i;
                while lines.get(i).is_some_and(|l| !l.trim().is_empty()) {
                    i += 1;
                }
                let block = lines.get(start..i).unwrap_or_default().join("\n");
                let record = change_record(&block).map_err(err)?;
                let touched = touched_dn(&record);
                cases.push(Case {
                    origin: origin.clone(),
                    identity,
                    request: Request::Change(record),
                    controls,
                    deliberate: None,
                });
                if readback {
                    cases.push(readback_case(&format!("{origin} read-back"), touched));
                }
            }
            other => return Err(err(format!("unknown case type {other:?}"))),
        }
    }
    Ok(cases)
}

/// The search that shows what a write did to an entry.
pub fn readback_case(origin: &str, dn: Vec<u8>) -> Case {
    readback_scoped(origin, dn, SearchScope::BaseObject)
}

/// A read-back of `dn` with `scope`, as root with ManageDsaIT, attributes `*` and `+`.
pub fn readback_scoped(origin: &str, dn: Vec<u8>, scope: SearchScope) -> Case {
    Case {
        origin: origin.to_string(),
        identity: Identity::Root,
        request: Request::Search(SearchRequest {
            base: dn,
            scope,
            deref: DerefAliases::Never,
            size_limit: 0,
            time_limit: 0,
            types_only: false,
            filter: Filter::Present("objectClass".into()),
            attributes: vec!["*".into(), "+".into()],
        }),
        controls: vec![Control {
            oid: MANAGE_DSA_IT.into(),
            critical: false,
            value: None,
        }],
        deliberate: None,
    }
}

/// The DN of the entry after the change (a renamed entry's new DN).
fn touched_dn(rec: &ChangeRecord) -> Vec<u8> {
    match &rec.change {
        LdifChange::ModDn {
            new_rdn,
            new_superior,
            ..
        } => {
            let parent = match new_superior {
                Some(s) => s.clone(),
                None => Dn::parse(&rec.dn)
                    .map(|d| d.parent().to_string().into_bytes())
                    .unwrap_or_default(),
            };
            let mut dn = new_rdn.clone();
            if !parent.is_empty() {
                dn.push(b',');
                dn.extend_from_slice(&parent);
            }
            dn
        }
        _ => rec.dn.clone(),
    }
}

fn change_record(block: &str) -> Result<ChangeRecord, String> {
    let mut reader = LdifReader::new(block.as_bytes());
    let record = match reader.next() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(format!("LDIF change record: {e}")),
        None => return Err("empty change record".into()),
    };
    if reader.next().is_some() {
        return Err("one change record per block".into());
    }
    match record {
        LdifRecord::Change { dn, change, .. } => Ok(ChangeRecord { dn, change }),
        LdifRecord::Content { .. } => Err("expected a changetype: line".into()),
    }
}

type Kv = BTreeMap<String, Vec<u8>>;

/// Splits `key=value` tokens. A value is `"..."` (ends at a quote followed by a space or the end
/// of the line, so DN escapes such as `\"` need no care), a filter in balanced parentheses, or a
/// run of non-space characters; `key::` takes base64.
pub fn tokenize(s: &str) -> Result<Kv, String> {
    let mut out = Kv::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
            continue;
        }
        // The key ends at `=`, or at `::` which introduces a base64 value.
        let rest = s.get(i..).unwrap_or("");
        let eq = rest.find('=');
        let colons = rest.find("::");
        let (key_len, b64) = match (eq, colons) {
            (Some(e), Some(c)) if c < e => (c, true),
            (Some(e), _) => (e, false),
            (None, Some(c)) => (c, true),
            (None, None) => return Err(format!("expected key=value at {rest:?}")),
        };
        let mut key = rest.get(..key_len).unwrap_or("").to_string();
        if key.is_empty() || key.contains(char::is_whitespace) || key.contains(':') {
            return Err(format!("bad key {key:?}"));
        }
        i += key_len + if b64 { 2 } else { 1 };
        let (value, next) = match b.get(i) {
            Some(b'"') => {
                let mut j = i + 1;
                loop {
                    match b.get(j) {
                        None => return Err(format!("unterminated quote after {key}=")),
                        Some(b'"') if b.get(j + 1).is_none_or(u8::is_ascii_whitespace) => break,
                        Some(_) => j += 1,
                    }
                }
                (b.get(i + 1..j).unwrap_or_default().to_vec(), j + 1)
            }
            Some(b'(') => {
                let mut depth = 0usize;
                let mut j = i;
                loop {
                    match b.get(j) {
                        None => return Err(format!("unbalanced parentheses after {key}=")),
                        Some(b'(') => depth += 1,
                        Some(b')') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Some(_) => {}
                    }
                    j += 1;
                }
                (b.get(i..=j).unwrap_or_default().to_vec(), j + 1)
            }
            _ => {
                let mut j = i;
                while b.get(j).is_some_and(|c| !c.is_ascii_whitespace()) {
                    j += 1;
                }
                (b.get(i..j).unwrap_or_default().to_vec(), j)
            }
        };
        let value = if b64 {
            base64::engine::general_purpose::STANDARD
                .decode(&value)
                .map_err(|e| format!("{key}:: is not base64: {e}"))?
        } else {
            value
        };
        key.make_ascii_lowercase();
        if out.insert(key.clone(), value).is_some() {
            return Err(format!("{key} given twice"));
        }
        i = next;
    }
    Ok(out)
}

fn text(v: Vec<u8>, key: &str) -> Result<String, String> {
    String::from_utf8(v).map_err(|_| format!("{key} is not UTF-8"))
}

fn number(kv: &mut Kv, key: &str) -> Result<i32, String> {
    match kv.remove(key) {
        None => Ok(0),
        Some(v) => text(v, key)?
            .parse()
            .map_err(|_| format!("{key} must be a number")),
    }
}

fn no_leftovers(kv: &Kv) -> Result<(), String> {
    match kv.keys().next() {
        Some(k) => Err(format!("unknown key {k:?}")),
        None => Ok(()),
    }
}

fn identity(v: Option<Vec<u8>>, default: Identity) -> Result<Identity, String> {
    let Some(v) = v else { return Ok(default) };
    match v.as_slice() {
        b"anon" | b"anonymous" => Ok(Identity::Anonymous),
        b"root" => Ok(Identity::Root),
        _ => {
            // DN/password: the password follows the last slash.
            let slash = v
                .iter()
                .rposition(|&c| c == b'/')
                .ok_or("as= takes anon, root or DN/password")?;
            Ok(Identity::Simple {
                dn: v.get(..slash).unwrap_or_default().to_vec(),
                pw: v.get(slash + 1..).unwrap_or_default().to_vec(),
            })
        }
    }
}

/// `manage=1` (ManageDsaIT, critical), `assert=(filter)` (RFC 4528, critical),
/// `preread=a,b` / `postread=a,b` (RFC 4527, critical) and
/// `sort=KEYS` (RFC 2891, critical), `vlv=B/A/OFFSET/COUNT` or `vlv=B/A:VALUE` (critical),
/// `control=OID[!]` for a valueless control (`!` marks it critical), and `authzid=ID` for RFC
/// 4370's proxied authorization (critical, the value as given: `dn:DN`, `u:NAME`, or empty).
fn controls(kv: &mut Kv) -> Result<Vec<Control>, String> {
    let mut out = Vec::new();
    if let Some(v) = kv.remove("manage") {
        if v != b"0" {
            out.push(Control {
                oid: MANAGE_DSA_IT.into(),
                critical: true,
                value: None,
            });
        }
    }
    // RFC 3876 Matched Values: `mv=(item)(item)...`, simple filter items as ldapsearch's `-E mv=`.
    if let Some(v) = kv.remove("mv") {
        let v = text(v, "mv")?;
        let items = match Filter::parse(&format!("(&{v})")).map_err(|e| format!("mv: {e}"))? {
            Filter::And(items) => items,
            other => vec![other],
        };
        out.push(Control {
            oid: VALUES_RETURN.into(),
            critical: true,
            value: Some(canopy_proto::encode_values_return(&items)),
        });
    }
    if let Some(v) = kv.remove("assert") {
        let f = Filter::parse(&text(v, "assert")?).map_err(|e| format!("assert: {e}"))?;
        out.push(Control {
            oid: ASSERTION.into(),
            critical: true,
            value: Some(crate::rawber::filter_ber(&f)),
        });
    }
    for (key, oid) in [("preread", PRE_READ), ("postread", POST_READ)] {
        if let Some(v) = kv.remove(key) {
            let attrs: Vec<String> = text(v, key)?
                .split(',')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect();
            out.push(Control {
                oid: oid.into(),
                critical: true,
                value: Some(crate::rawber::attribute_selection(&attrs)),
            });
        }
    }
    if let Some(v) = kv.remove("sort") {
        out.push(crate::sorting::sort_control(&text(v, "sort")?)?);
    }
    if let Some(v) = kv.remove("vlv") {
        out.push(crate::sorting::vlv_control(&text(v, "vlv")?)?);
    }
    if let Some(v) = kv.remove("authzid") {
        out.push(Control {
            oid: PROXY_AUTHZ.into(),
            critical: true,
            value: Some(v),
        });
    }
    if let Some(v) = kv.remove("control") {
        let v = text(v, "control")?;
        for one in v.split(',') {
            let (oid, critical) = match one.strip_suffix('!') {
                Some(o) => (o, true),
                None => (one, false),
            };
            out.push(Control {
                oid: oid.to_string(),
                critical,
                value: None,
            });
        }
    }
    Ok(out)
}

fn search_case(origin: &str, mut kv: Kv) -> Result<Case, String> {
    let identity = identity(kv.remove("as"), Identity::Anonymous)?;
    let controls = controls(&mut kv)?;
    let base = kv
        .remove("base")
        .unwrap_or_else(|| SUFFIX.as_bytes().to_vec());
    let scope = match kv.remove("scope").as_deref().unwrap_or(b"sub") {
        b"base" => SearchScope::BaseObject,
        b"one" => SearchScope::SingleLevel,
        b"sub" => SearchScope::WholeSubtree,
        b"children" => SearchScope::SubordinateSubtree,
        other => return Err(format!("scope {:?}", String::from_utf8_lossy(other))),
    };
    let deref = match kv.remove("deref").as_deref().unwrap_or(b"never") {
        b"never" => DerefAliases::Never,
        b"search" => DerefAliases::InSearching,
        b"find" => DerefAliases::FindingBaseObj,
        b"always" => DerefAliases::Always,
        other => return Err(format!("deref {:?}", String::from_utf8_lossy(other))),
    };
    let filter_text = match kv.remove("filter") {
        Some(f) => text(f, "filter")?,
        None => "(objectClass=*)".into(),
    };
    let filter = Filter::parse(&filter_text).map_err(|e| format!("filter: {e}"))?;
    let attributes = match kv.remove("attrs") {
        None => Vec::new(),
        Some(a) => text(a, "attrs")?
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    };
    let types_only = kv.remove("typesonly").is_some_and(|v| v != b"0");
    let size_limit = number(&mut kv, "sizelimit")?;
    let time_limit = number(&mut kv, "timelimit")?;
    let raw = kv.remove("rawfilter");
    let paged = kv
        .remove("paged")
        .map(|v| {
            text(v, "paged")?
                .parse::<i32>()
                .map_err(|_| "paged= takes a page size".to_string())
        })
        .transpose()?;
    let deliberate = kv
        .remove("deliberate")
        .map(|v| text(v, "deliberate"))
        .transpose()?;
    no_leftovers(&kv)?;
    let req = SearchRequest {
        base,
        scope,
        deref,
        size_limit,
        time_limit,
        types_only,
        filter,
        attributes,
    };
    let request = match (raw, paged) {
        (Some(_), Some(_)) => return Err("rawfilter= and paged= do not combine".into()),
        (None, None) => Request::Search(req),
        (None, Some(size)) => Request::PagedSearch { req, size },
        (Some(hex), None) => Request::RawSearch {
            req,
            filter_ber: unhex(&hex)?,
        },
    };
    Ok(Case {
        origin: origin.to_string(),
        identity,
        request,
        controls,
        deliberate,
    })
}

fn unhex(v: &[u8]) -> Result<Vec<u8>, String> {
    let s = std::str::from_utf8(v).map_err(|_| "rawfilter is not hex")?;
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if s.len() % 2 != 0 {
        return Err("rawfilter has an odd number of hex digits".into());
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| "rawfilter is not hex".to_string())
        })
        .collect()
}

/// `exop name=OID [value=V] [as=...] [control=...]`: an extended operation. A Password Modify changes
/// the directory and runs as a write.
fn exop_case(origin: &str, mut kv: Kv) -> Result<Case, String> {
    let identity = identity(kv.remove("as"), Identity::Anonymous)?;
    let controls = controls(&mut kv)?;
    let name = text(kv.remove("name").ok_or("exop needs name=")?, "name")?;
    let value = kv.remove("value");
    no_leftovers(&kv)?;
    Ok(Case {
        origin: origin.to_string(),
        identity,
        request: Request::Extended { name, value },
        controls,
        deliberate: None,
    })
}

fn compare_case(origin: &str, mut kv: Kv) -> Result<Case, String> {
    let identity = identity(kv.remove("as"), Identity::Anonymous)?;
    let controls = controls(&mut kv)?;
    let dn = kv.remove("dn").ok_or("compare needs dn=")?;
    let attr = text(kv.remove("attr").ok_or("compare needs attr=")?, "attr")?;
    let value = kv.remove("value").ok_or("compare needs value=")?;
    no_leftovers(&kv)?;
    Ok(Case {
        origin: origin.to_string(),
        identity,
        request: Request::Compare(CompareRequest { dn, attr, value }),
        controls,
        deliberate: None,
    })
}

/// `saslbind mech=MECH [creds=V] [ldapi=1]`: one SASL BindRequest on a fresh connection.
fn sasl_bind_case(origin: &str, mut kv: Kv) -> Result<Case, String> {
    let mechanism = text(kv.remove("mech").ok_or("saslbind needs mech=")?, "mech")?;
    let credentials = kv.remove("creds");
    let ldapi = kv.remove("ldapi").is_some_and(|v| v != b"0");
    no_leftovers(&kv)?;
    Ok(Case {
        origin: origin.to_string(),
        identity: Identity::Anonymous,
        request: Request::SaslBind {
            mechanism,
            credentials,
            ldapi,
        },
        controls: Vec::new(),
        deliberate: None,
    })
}

fn bind_case(origin: &str, mut kv: Kv) -> Result<Case, String> {
    let dn = kv.remove("dn").unwrap_or_default();
    let pw = kv.remove("pw").unwrap_or_default();
    no_leftovers(&kv)?;
    Ok(Case {
        origin: origin.to_string(),
        identity: Identity::Anonymous,
        request: Request::Bind { dn, pw },
        controls: Vec::new(),
        deliberate: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::ModifyOperation;

    #[test]
    fn tokens() {
        let kv = tokenize(
            r#"base="cn=\"q\",dc=x" filter=(&(cn=a b)(sn=*)) attrs=cn,sn value::AAE= k="""#,
        )
        .unwrap();
        assert_eq!(kv["base"], br#"cn=\"q\",dc=x"#.to_vec());
        assert_eq!(kv["filter"], b"(&(cn=a b)(sn=*))".to_vec());
        assert_eq!(kv["attrs"], b"cn,sn".to_vec());
        assert_eq!(kv["value"], vec![0u8, 1]);
        assert_eq!(kv["k"], b"".to_vec());
        for bad in ["novalue", "a=(b", "a=\"open", "a=1 a=2", "v::!!"] {
            assert!(tokenize(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn search_lines() {
        let cases = parse(
            "t",
            "# comment\n\nsearch base=\"cn=x y,dc=example,dc=com\" scope=one deref=always \
             filter=(cn=*) attrs=cn,1.1 typesonly=1 sizelimit=2 as=root manage=1\n\
             search\n",
        )
        .unwrap();
        assert_eq!(cases.len(), 2);
        let Request::Search(r) = &cases[0].request else {
            panic!()
        };
        assert_eq!(r.base, b"cn=x y,dc=example,dc=com".to_vec());
        assert_eq!(r.scope, SearchScope::SingleLevel);
        assert_eq!(r.deref, DerefAliases::Always);
        assert_eq!(r.attributes, vec!["cn", "1.1"]);
        assert!(r.types_only);
        assert_eq!(r.size_limit, 2);
        assert_eq!(cases[0].identity, Identity::Root);
        assert_eq!(cases[0].controls.len(), 1);
        assert_eq!(cases[0].origin, "t:3");
        let Request::Search(d) = &cases[1].request else {
            panic!()
        };
        assert_eq!(d.base, SUFFIX.as_bytes().to_vec());
        assert_eq!(d.scope, SearchScope::WholeSubtree);
        assert_eq!(cases[1].identity, Identity::Anonymous);
    }

    #[test]
    fn compare_bind_and_identity() {
        let cases = parse(
            "t",
            "compare dn=uid=a,dc=x attr=cn value=\"A B\" as=uid=a,dc=x/pw/2\nbind dn=uid=a pw=x\n",
        )
        .unwrap();
        let Request::Compare(c) = &cases[0].request else {
            panic!()
        };
        assert_eq!((c.attr.as_str(), c.value.as_slice()), ("cn", &b"A B"[..]));
        assert_eq!(
            cases[0].identity,
            Identity::Simple {
                dn: b"uid=a,dc=x/pw".to_vec(),
                pw: b"2".to_vec()
            }
        );
        assert!(matches!(cases[1].request, Request::Bind { .. }));
    }

    #[test]
    fn change_blocks_get_a_readback() {
        let text = "dn: cn=n,dc=example,dc=com\nchangetype: modify\nreplace: sn\nsn: x\n-\n\n\
                    change as=anon readback=0\ndn: cn=n,dc=example,dc=com\nchangetype: delete\n\n\
                    dn: cn=n,ou=a,dc=example,dc=com\nchangetype: modrdn\nnewrdn: cn=m\ndeleteoldrdn: 1\n";
        let cases = parse("w", text).unwrap();
        assert_eq!(cases.len(), 5);
        let Request::Change(m) = &cases[0].request else {
            panic!()
        };
        let LdifChange::Modify(ch) = &m.change else {
            panic!()
        };
        assert_eq!(ch[0].operation, ModifyOperation::Replace);
        assert_eq!(cases[0].identity, Identity::Root);
        assert_eq!(cases[1].origin, "w:1 read-back");
        assert_eq!(cases[2].identity, Identity::Anonymous);
        assert!(matches!(cases[3].request, Request::Change(_)));
        let Request::Search(rb) = &cases[4].request else {
            panic!()
        };
        assert_eq!(rb.base, b"cn=m,ou=a,dc=example,dc=com".to_vec());
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line) in [
            ("search scope=deep\n", "t:1"),
            ("\nsearch filter=(cn=a\n", "t:2"),
            ("frobnicate x=1\n", "t:1"),
            ("search bogus=1\n", "t:1"),
            ("compare dn=x attr=cn\n", "t:1"),
            ("dn: cn=x\ncn: y\n", "t:1"),
            ("search rawfilter=abc\n", "t:1"),
        ] {
            let e = parse("t", text).unwrap_err();
            assert_eq!(e.origin, line, "{text}");
        }
    }
}
