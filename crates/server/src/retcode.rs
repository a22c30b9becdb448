//! slapd's retcode overlay (slapo-retcode(5)) in the frontend, a [`FrontHook`]: requests on the
//! configured items below `parent` are answered with the item's result code, text, matched DN and
//! referrals (after its `sleeptime`), in the database's place, so that clients can be tested against
//! every result code. Options (slapd's without the `retcode-` prefix): `parent`, `item` (one line or
//! a list: `RDN CODE [op=...] [text=...] [matched=DN] [ref=URL...] [sleeptime=N]`), `sleep` (seconds
//! every request under the overlay waits; negative: a random wait up to that many).

use std::sync::OnceLock;
use std::time::Duration;

use canopy_proto::{Dn, LdapResult, RequestKind, ResultCode, SearchScope};
use canopy_schema::NormDn;

use crate::databases::{Answer, Asked, Database, FrontHook};
use crate::slapd_line::words;

/// The operations an item answers (`op=`): one bit per kind, slapd's names.
const OP_NAMES: [(&str, u8); 13] = [
    ("add", 1),
    ("bind", 2),
    ("compare", 4),
    ("delete", 8),
    ("modify", 16),
    ("rename", 32),
    ("modrdn", 32),
    ("search", 64),
    ("extended", 128),
    ("auth", 2),
    ("read", 4 | 64),
    ("write", 1 | 8 | 16 | 32),
    ("all", 255),
];

fn op_bit(kind: RequestKind) -> u8 {
    match kind {
        RequestKind::Add => 1,
        RequestKind::Bind => 2,
        RequestKind::Compare => 4,
        RequestKind::Delete => 8,
        RequestKind::Modify => 16,
        RequestKind::ModifyDn => 32,
        RequestKind::Search => 64,
        RequestKind::Extended => 128,
    }
}

/// One `retcode-item`.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    rdn: String,
    code: u32,
    ops: u8,
    text: String,
    matched: Option<String>,
    refs: Vec<String>,
    sleep: i64,
}

/// The parent and the items' DNs in the database's normal form, made at the first request.
struct Names {
    parent: (Dn, NormDn),
    items: Vec<Option<NormDn>>,
}

/// The retcode overlay of one database.
pub struct Retcode {
    parent: Option<String>,
    items: Vec<Item>,
    sleep: i64,
    names: OnceLock<Option<Names>>,
}

/// A number as C's `strtol(s, _, 0)` reads one: `0x` hexadecimal, a leading `0` octal, else decimal.
fn c_number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// One `retcode-item` line, refused with slapd's reasons.
fn item(line: &str) -> Result<Item, String> {
    let words = words(line)?;
    let [rdn, code, options @ ..] = words.as_slice() else {
        return Err(format!(
            "item {line:?}: \"<RDN> <retcode> [...]\": missing args"
        ));
    };
    if rdn.is_empty() || Dn::parse(rdn.as_bytes()).map_or(true, |dn| dn.rdns.len() != 1) {
        return Err(format!("item {line:?}: value {rdn:?} is not a RDN"));
    }
    let code = c_number(code)
        .and_then(|c| u32::try_from(c).ok())
        .ok_or_else(|| format!("item {line:?}: unable to parse return code {code:?}"))?;
    let mut out = Item {
        rdn: rdn.clone(),
        code,
        ops: 255,
        text: String::new(),
        matched: None,
        refs: Vec::new(),
        sleep: 0,
    };
    for option in options {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        match key.to_ascii_lowercase().as_str() {
            "op" => {
                out.ops = 0;
                for name in value.split(',').filter(|n| !n.is_empty()) {
                    let bit = OP_NAMES
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .ok_or_else(|| format!("item {line:?}: unknown op {name:?}"))?;
                    out.ops |= bit.1;
                }
            }
            "text" => out.text = value.to_string(),
            "matched" => {
                Dn::parse(value.as_bytes()).map_err(|_| {
                    format!("item {line:?}: unable to prettify matched DN {value:?}")
                })?;
                out.matched = Some(value.to_string());
            }
            "ref" => out.refs = value.split(' ').map(str::to_string).collect(),
            "sleeptime" => {
                out.sleep = value
                    .parse()
                    .map_err(|_| format!("item {line:?}: unable to parse \"{option}\""))?
            }
            "unsolicited" | "flags" => {
                return Err(format!(
                    "item {line:?}: {key}= (unsolicited responses, disconnections) is not supported"
                ))
            }
            _ => return Err(format!("item {line:?}: unknown option {option:?}")),
        }
    }
    Ok(out)
}

impl Retcode {
    /// The overlay of an `[[overlay]]` table named `retcode`, checked.
    pub fn from_options(options: &toml::Table) -> Result<Retcode, String> {
        let mut out = Retcode {
            parent: None,
            items: Vec::new(),
            sleep: 0,
            names: OnceLock::new(),
        };
        for (key, value) in options {
            match key.as_str() {
                "parent" => {
                    let dn = value
                        .as_str()
                        .ok_or_else(|| format!("{key}: expected a DN"))?;
                    Dn::parse(dn.as_bytes()).map_err(|_| format!("{key}: {dn:?} is not a DN"))?;
                    out.parent = Some(dn.to_string());
                }
                "item" => {
                    let lines: Vec<&str> = match value {
                        toml::Value::String(s) => vec![s.as_str()],
                        toml::Value::Array(a) => a
                            .iter()
                            .map(|v| v.as_str().ok_or(format!("{key}: expected strings")))
                            .collect::<Result<_, _>>()?,
                        _ => return Err(format!("{key}: expected a string or a list")),
                    };
                    for line in lines {
                        out.items.push(item(line)?);
                    }
                }
                "sleep" => {
                    out.sleep = match value {
                        toml::Value::Integer(n) => *n,
                        toml::Value::String(s) => s
                            .trim()
                            .parse()
                            .map_err(|_| format!("{key}: expected a number of seconds"))?,
                        _ => return Err(format!("{key}: expected a number of seconds")),
                    }
                }
                "indir" => {
                    if value.as_bool() == Some(true) {
                        return Err(
                            "indir: items stored in the directory (errAbsObject) are not supported"
                                .into(),
                        );
                    }
                }
                _ => return Err(format!("unknown option {key:?}")),
            }
        }
        Ok(out)
    }

    /// The parent (the database's suffix without `parent`) and the items in `dir`'s normal form.
    fn names(&self, dir: &Database) -> Option<&Names> {
        self.names
            .get_or_init(|| {
                let backend = dir.backend();
                let parent = match &self.parent {
                    Some(raw) => backend.normalize(raw.as_bytes()).ok()?,
                    None => (dir.suffix_dn().clone(), dir.suffix().clone()),
                };
                let items = self
                    .items
                    .iter()
                    .map(|item| {
                        let dn = format!("{},{}", item.rdn, parent.0);
                        backend.normalize(dn.as_bytes()).ok().map(|(_, ndn)| ndn)
                    })
                    .collect();
                Some(Names { parent, items })
            })
            .as_ref()
    }
}

/// `seconds` as slapd's retcode_sleep waits them: negative means a random wait below that many.
fn wait(seconds: i64) -> Duration {
    let secs = if seconds < 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        u64::from(nanos) % seconds.unsigned_abs()
    } else {
        seconds.unsigned_abs()
    };
    Duration::from_secs(secs)
}

/// The overlay in the frontend.
pub struct RetcodeHook(pub Retcode);

impl FrontHook for RetcodeHook {
    fn answers(&self) -> bool {
        true
    }

    /// slapd's retcode_op_func: a request on an item below the parent is answered by the item (when
    /// its `op=` covers the request), anything else below the parent is noSuchObject with the parent
    /// as matched DN; requests elsewhere go on (after `sleep`).
    fn answer(&self, dir: &Database, asked: &Asked<'_>) -> Option<Answer> {
        let (kind, dn, ndn, scope) = (asked.kind, asked.dn, asked.ndn, asked.scope);
        let retcode = &self.0;
        let mut answer = Answer {
            delay: wait(retcode.sleep),
            result: None,
        };
        let names = retcode.names(dir)?;
        let (parent_dn, parent) = &names.parent;
        if !parent.is_suffix_of(ndn) {
            return (!answer.delay.is_zero()).then_some(answer);
        }
        // A one-level or subtree search of the parent itself goes to the database (slapd lists the
        // items there; Canopy does not).
        if kind == RequestKind::Search && scope != Some(SearchScope::BaseObject) && ndn == parent {
            return (!answer.delay.is_zero()).then_some(answer);
        }
        let not_found = |text: &str| LdapResult {
            code: ResultCode::NoSuchObject,
            matched_dn: parent_dn.to_string().into_bytes(),
            message: text.to_string(),
            referral: Vec::new(),
        };
        if ndn.parent().as_ref() != Some(parent) {
            answer.result = Some(not_found(""));
            return Some(answer);
        }
        let Some(found) = names
            .items
            .iter()
            .position(|item| item.as_ref() == Some(ndn))
        else {
            answer.result = Some(not_found("retcode not found"));
            return Some(answer);
        };
        let item = &retcode.items[found];
        if item.ops & op_bit(kind) == 0 {
            return (!answer.delay.is_zero()).then_some(answer);
        }
        let mut result = LdapResult {
            code: ResultCode::from_code(item.code),
            matched_dn: item.matched.clone().unwrap_or_default().into_bytes(),
            message: item.text.clone(),
            referral: Vec::new(),
        };
        if result.code == ResultCode::Referral {
            let refs: Vec<&str> = match item.refs.as_slice() {
                [] => asked.default_referral.into_iter().collect(),
                refs => refs.iter().map(String::as_str).collect(),
            };
            if refs.is_empty() {
                result.code = ResultCode::Other;
                result.message = "bad referral object".into();
            }
            for url in refs {
                let rewritten =
                    canopy_directory::referral::default_referral(url, &dn.to_string(), None);
                result.referral.extend(rewritten.urls);
            }
        }
        answer.delay += wait(item.sleep);
        answer.result = Some(result);
        Some(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn items_as_slapd_reads_them() {
        let r = Retcode::from_options(&table(
            r#"
parent = "ou=RetCodes,dc=example,dc=com"
item = [
  '"cn=success w/ delay" 0x00 sleeptime=2',
  '"cn=timelimitExceeded" 0x03 op=search',
  '"cn=referral" 0x0a text="LDAPv3" ref="ldap://:9019"',
  '"cn=strongAuthNotSupported" 0x07 text="same as authMethodNotSupported"',
  '"cn=noOperation" 0x410e',
  '"cn=octal" 017 op=read,write',
]
sleep = -3
"#,
        ))
        .unwrap();
        assert_eq!(r.items.len(), 6);
        assert_eq!(r.items[0].rdn, "cn=success w/ delay");
        assert_eq!((r.items[0].code, r.items[0].sleep), (0, 2));
        assert_eq!((r.items[1].code, r.items[1].ops), (3, 64));
        assert_eq!(r.items[2].refs, ["ldap://:9019"]);
        assert_eq!(r.items[2].text, "LDAPv3");
        assert_eq!(r.items[3].text, "same as authMethodNotSupported");
        assert_eq!(r.items[4].code, 0x410e);
        assert_eq!(
            (r.items[5].code, r.items[5].ops),
            (15, 4 | 64 | 1 | 8 | 16 | 32)
        );
        assert_eq!(r.sleep, -3);
        assert!(wait(-3) < Duration::from_secs(3));
        assert_eq!(wait(2), Duration::from_secs(2));
    }

    #[test]
    fn bad_tables_are_refused_with_the_reason() {
        for (text, reason) in [
            (r#"item = '"cn=x"'"#, "missing args"),
            (r#"item = '"cn=x,o=y" 0'"#, "is not a RDN"),
            (r#"item = '"cn=x" zero'"#, "unable to parse return code"),
            (r#"item = '"cn=x" 0 op=frobnicate'"#, "unknown op"),
            (r#"item = '"cn=x" 0 colour=blue'"#, "unknown option"),
            (r#"item = '"cn=x" 0 flags=pre-disconnect'"#, "not supported"),
            (r#"item = '"cn=x" 0 sleeptime=soon'"#, "unable to parse"),
            ("indir = true", "not supported"),
            (r#"parent = "not a dn""#, "is not a DN"),
            (r#"sleep = "long""#, "number of seconds"),
            ("bogus = 1", "unknown option"),
        ] {
            let error = Retcode::from_options(&table(text))
                .err()
                .unwrap_or_default();
            assert!(error.contains(reason), "{text}: {error}");
        }
    }

    #[test]
    fn numbers_as_strtol_reads_them() {
        assert_eq!(c_number("0x35"), Some(53));
        assert_eq!(c_number("53"), Some(53));
        assert_eq!(c_number("010"), Some(8));
        assert_eq!(c_number("0"), Some(0));
        assert_eq!(c_number("-1"), Some(-1));
        assert_eq!(c_number("0x"), None);
        assert_eq!(c_number("5x"), None);
    }
}
