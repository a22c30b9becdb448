//! Parsing OpenLDAP `access to <what> by <who> <access> [<control>]` rules into [`Rule`]s.

use std::net::IpAddr;

use canopy_core::classes::with_superclasses;
use canopy_proto::{Dn, Filter};
use canopy_schema::{NormDn, Schema};
use regex_automata::meta::Regex;

use super::{privileges, Mask};

/// One compiled `access to` rule.
#[derive(Debug)]
pub struct Rule {
    /// The rule as written, for `acl-check` and logs.
    pub text: String,
    /// The `<what>` words as written.
    pub what_text: String,
    pub what: What,
    pub bys: Vec<By>,
}

/// The `<what>` part: which entries and attributes a rule is about.
#[derive(Debug, Default)]
pub struct What {
    pub dn: DnPattern,
    pub filter: Option<Filter>,
    /// None: every attribute (and `entry`, `children`).
    pub attrs: Option<Vec<AttrItem>>,
    /// `val=`: the rule is about one value of its single attribute.
    pub val: Option<ValPattern>,
}

/// A `val[.style]=` pattern.
#[derive(Debug)]
pub enum ValPattern {
    /// Equal under the attribute's equality rule: the normalized value (raw bytes without a rule).
    Exact(Vec<u8>),
    Regex(Box<Regex>),
}

/// A DN pattern with its style.
#[derive(Debug, Default)]
pub enum DnPattern {
    #[default]
    Any,
    Base(NormDn),
    One(NormDn),
    Subtree(NormDn),
    Children(NormDn),
    /// `level{n}` (`<who>` only): the DNs exactly `n` levels below the DN, `n` >= 1. slapd's
    /// `acl_mask_dn` wants a DN longer than the pattern, so `level{0}` matches nothing (not base, as
    /// slapd.access(5) has it).
    Level(NormDn, usize),
    Regex(Box<Regex>),
}

/// One item of an `attrs=` list, attribute types by canonical name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrItem {
    Entry,
    Children,
    /// An attribute type and its subtypes.
    Type(String),
    /// `!objectClass`: every attribute (and `entry`, `children`) that the class neither requires nor
    /// allows, counting its superclasses' (top's objectClass too), as slapd's `ad_inlist`, which
    /// also reads a list in order and lets such an item decide at once: in `!person,cn`, `cn` is
    /// never reached. `!extensibleObject` covers nothing.
    NotClass {
        class: String,
        /// The MUST and MAY types of the class and its superclasses (canonical names).
        allowed: Vec<String>,
    },
}

/// One `by <who> <access> [<control>]` clause.
#[derive(Debug)]
pub struct By {
    /// The clause as written, without `by`.
    pub text: String,
    /// Every one of these must match (slapd allows several who specifiers in one clause).
    pub who: Vec<WhoSpec>,
    pub modifier: Modifier,
    pub privileges: Mask,
    /// slapd's `self` access modifier (`selfwrite`): the clause applies only to a check of one value
    /// that is the requester's own DN.
    pub self_only: bool,
    pub control: Control,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    /// A level or `=privs`: the clause sets the privileges.
    Set,
    /// `+privs`: adds to those granted so far.
    Add,
    /// `-privs`: removes from those granted so far.
    Remove,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Stop,
    Continue,
    Break,
}

/// A `<who>` specifier.
#[derive(Debug)]
pub enum WhoSpec {
    Anyone,
    Anonymous,
    Users,
    SelfEntry,
    Dn(DnPattern),
    /// A DN pattern with `$N` references to the submatches of the rule's `<what>` DN, filled in per
    /// entry (slapd's `expand`).
    DnExpand(Box<super::expand::Expanding>),
    /// `dnattr=<attr>`: the requester's DN is a value of this attribute type (canonical name; DN
    /// syntax) in the entry being accessed.
    DnAttr(String),
    /// `realanonymous`, `realusers`, `realself`, `realdn=`, `realdnattr=`: the inner specifier tested
    /// on the identity the connection is bound as (slapd's `c_ndn`, [`Who::real_ndn`]) instead of the
    /// one the operation runs as. They differ only under the proxied authorization control; a SASL
    /// bind with an authzid makes the authorization identity the connection's, as slapd does.
    ///
    /// [`Who::real_ndn`]: crate::access::Who::real_ndn
    Real(Box<WhoSpec>),
    Group {
        dn: NormDn,
        class: String,
        attr: String,
    },
    PeerIp {
        addr: IpAddr,
        mask: Option<IpAddr>,
    },
    PeerPath(String),
    Ssf(Ssf, u32),
    /// `set[.style]=<pattern>`: slapd's set language (`sets.rs`).
    Set(Box<super::sets::SetClause>),
}

impl WhoSpec {
    /// The specifier a `real...` form tests (itself for the others).
    pub fn unreal(&self) -> &WhoSpec {
        match self {
            WhoSpec::Real(inner) => inner.unreal(),
            other => other,
        }
    }
}

/// Which security strength factor an `ssf` clause tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ssf {
    Any,
    Transport,
    Tls,
    Sasl,
}

/// Parses rule number `index` (0-based); errors name the rule and the offending word.
pub fn parse_rule(schema: &Schema, index: usize, text: &str) -> Result<Rule, String> {
    let fail = |word: &str, why: &str| format!("access rule {index}: {why}: {word:?}");
    let words = split_words(text).map_err(|why| fail(text, &why))?;
    let mut words = words.iter().map(String::as_str).peekable();
    // An `{n}` prefix (olcAccess) and a leading `access` are tolerated.
    if words
        .peek()
        .is_some_and(|w| w.starts_with('{') && w.ends_with('}'))
    {
        words.next();
    }
    if words
        .peek()
        .is_some_and(|w| w.eq_ignore_ascii_case("access"))
    {
        words.next();
    }
    match words.next() {
        Some(w) if w.eq_ignore_ascii_case("to") => {}
        Some(w) => return Err(fail(w, "expected \"to\"")),
        None => return Err(format!("access rule {index}: empty")),
    }
    let mut what = What::default();
    let mut what_words = Vec::new();
    while let Some(word) = words.next_if(|w| !w.eq_ignore_ascii_case("by")) {
        parse_what(schema, &mut what, word).map_err(|why| fail(word, &why))?;
        what_words.push(word);
    }
    if what_words.is_empty() {
        return Err(format!("access rule {index}: nothing after \"to\""));
    }
    let mut bys = Vec::new();
    while let Some(by) = words.next() {
        if !by.eq_ignore_ascii_case("by") {
            return Err(fail(by, "expected \"by\""));
        }
        bys.push(parse_by(schema, &mut words).map_err(|(word, why)| fail(&word, &why))?);
    }
    if bys.is_empty() {
        return Err(format!("access rule {index}: no \"by\" clause"));
    }
    Ok(Rule {
        text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        what_text: what_words.join(" "),
        what,
        bys,
    })
}

/// Splits on white space, keeping double-quoted parts (quotes removed) and parenthesized filters whole.
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut depth, mut escaped) = (false, 0usize, false);
    for c in text.chars() {
        if escaped {
            word.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => {
                word.push(c);
                escaped = true;
            }
            '"' => quoted = !quoted,
            '(' if !quoted => {
                depth += 1;
                word.push(c);
            }
            ')' if !quoted => {
                depth = depth.saturating_sub(1);
                word.push(c);
            }
            c if c.is_whitespace() && !quoted && depth == 0 => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if quoted {
        return Err("unbalanced quote".into());
    }
    if !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

fn parse_what(schema: &Schema, what: &mut What, word: &str) -> Result<(), String> {
    if word == "*" {
        return Ok(());
    }
    let (key, value) = word
        .split_once('=')
        .ok_or_else(|| "unknown <what> clause".to_string())?;
    let (name, style) = key.split_once('.').unwrap_or((key, ""));
    match name.to_ascii_lowercase().as_str() {
        "dn" => {
            what.dn = match dn_pattern(schema, style, value)? {
                // slapd 2.5 knows the level style in `<who>` only ("unknown dn style").
                DnPattern::Level(..) => {
                    return Err(
                        "dn.level{n} is for <who> clauses (slapd refuses it in <what>)".into(),
                    )
                }
                pattern => pattern,
            }
        }
        "filter" => {
            what.filter = Some(Filter::parse(value).map_err(|e| format!("bad filter ({e})"))?);
        }
        "attrs" | "attr" => what.attrs = Some(attr_items(schema, value)?),
        "val" => what.val = Some(val_pattern(schema, what, style, value)?),
        _ => return Err("unknown <what> clause".into()),
    }
    Ok(())
}

/// `val=` after `attrs=` naming one attribute type; styles exact (the default) and regex.
fn val_pattern(
    schema: &Schema,
    what: &What,
    style: &str,
    value: &str,
) -> Result<ValPattern, String> {
    let attr = match what.attrs.as_deref() {
        Some([AttrItem::Type(name)]) => name.as_str(),
        _ => return Err("val= needs attrs= with exactly one attribute type before it".into()),
    };
    // A `/matchingRule` suffix is accepted; the attribute's equality rule decides.
    let style = style
        .split('/')
        .next()
        .unwrap_or(style)
        .to_ascii_lowercase();
    match style.as_str() {
        "" | "exact" | "base" | "baseobject" => Ok(ValPattern::Exact(normalize_value(
            schema,
            attr,
            value.as_bytes(),
        )?)),
        "regex" => Ok(ValPattern::Regex(Box::new(regex(value)?))),
        _ => Err("unknown value style".into()),
    }
}

/// A value normalized by its attribute's equality rule, for `val=` comparisons.
pub fn normalize_value(schema: &Schema, attr: &str, value: &[u8]) -> Result<Vec<u8>, String> {
    let rule = schema.attribute_type(attr).and_then(|at| at.equality);
    match rule {
        Some(rule) => schema
            .normalize_value(rule, value)
            .map_err(|e| format!("bad value ({e})")),
        None => Ok(value.to_vec()),
    }
}

pub(super) fn regex(value: &str) -> Result<Regex, String> {
    regex_automata::meta::Builder::new()
        .syntax(regex_automata::util::syntax::Config::new().case_insensitive(true))
        .build(value)
        .map_err(|e| format!("bad regular expression ({e})"))
}

/// A DN pattern in one of slapd's styles; no style means base (`exact`), as in slapd.
pub(super) fn dn_pattern(schema: &Schema, style: &str, value: &str) -> Result<DnPattern, String> {
    let style = style.to_ascii_lowercase();
    if style == "regex" {
        if value == "*" || value == ".*" {
            return Ok(DnPattern::Any);
        }
        return Ok(DnPattern::Regex(Box::new(regex(value)?)));
    }
    let dn = normalize(schema, value)?;
    if let Some(level) = style
        .strip_prefix("level{")
        .and_then(|l| l.strip_suffix('}'))
    {
        let level = level
            .parse()
            .map_err(|_| "level{n} needs a number n >= 0".to_string())?;
        return Ok(DnPattern::Level(dn, level));
    }
    Ok(match style.as_str() {
        "" | "base" | "baseobject" | "exact" => DnPattern::Base(dn),
        "one" | "onelevel" => DnPattern::One(dn),
        "sub" | "subtree" => DnPattern::Subtree(dn),
        "children" => DnPattern::Children(dn),
        _ => return Err("unknown DN style".into()),
    })
}

fn normalize(schema: &Schema, value: &str) -> Result<NormDn, String> {
    let dn = Dn::parse(value.as_bytes()).map_err(|e| format!("bad DN ({e})"))?;
    schema
        .normalize_dn(&dn)
        .map_err(|e| format!("bad DN ({e})"))
}

fn attr_items(schema: &Schema, value: &str) -> Result<Vec<AttrItem>, String> {
    let mut items = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some(class) = name.strip_prefix('!') {
            let class = schema.object_class(class).ok_or_else(|| {
                format!("unknown object class {class:?} (`!` names an object class)")
            })?;
            let allowed = with_superclasses(schema, class)
                .into_iter()
                .flat_map(|c| c.must.iter().chain(&c.may).cloned())
                .collect();
            items.push(AttrItem::NotClass {
                class: class.name().to_string(),
                allowed,
            });
        } else if name.eq_ignore_ascii_case("entry") {
            items.push(AttrItem::Entry);
        } else if name.eq_ignore_ascii_case("children") {
            items.push(AttrItem::Children);
        } else if let Some(class) = name.strip_prefix('@') {
            let class = schema
                .object_class(class)
                .ok_or_else(|| format!("unknown object class {class:?}"))?;
            for class in with_superclasses(schema, class) {
                for attr in class.must.iter().chain(&class.may) {
                    items.push(AttrItem::Type(attr.clone()));
                }
            }
        } else {
            let at = schema
                .attribute_type(name)
                .ok_or_else(|| format!("unknown attribute type {name:?}"))?;
            items.push(AttrItem::Type(at.name().to_string()));
        }
    }
    if items.is_empty() {
        return Err("empty attribute list".into());
    }
    Ok(items)
}

type WordError = (String, String);

fn parse_by<'w>(
    schema: &Schema,
    words: &mut std::iter::Peekable<impl Iterator<Item = &'w str>>,
) -> Result<By, WordError> {
    let mut who = Vec::new();
    let mut text = Vec::new();
    let access = loop {
        let Some(word) = words.peek().copied() else {
            return Err(("by".into(), "missing access level".into()));
        };
        // `by <who> break` (or continue): the access may be left out; it changes nothing then.
        if !who.is_empty() && control_word(word).is_some() {
            break (Modifier::Add, 0, false);
        }
        words.next();
        text.push(word);
        if let Some(access) = parse_level(word) {
            if who.is_empty() {
                return Err((word.into(), "missing <who> before the access level".into()));
            }
            break access;
        }
        let spec = parse_who(schema, word).map_err(|why| (word.to_string(), why))?;
        if matches!(spec, WhoSpec::Set(_)) && who.iter().any(|w| matches!(w, WhoSpec::Set(_))) {
            return Err((word.into(), "set attribute already specified".into()));
        }
        who.push(spec);
    };
    let control = match words.next_if(|w| !w.eq_ignore_ascii_case("by")) {
        None => Control::Stop,
        Some(w) => {
            text.push(w);
            control_word(w).ok_or_else(|| {
                (
                    w.to_string(),
                    "expected stop, continue, break or by".to_string(),
                )
            })?
        }
    };
    let (modifier, privileges, self_only) = access;
    Ok(By {
        text: text.join(" "),
        who,
        modifier,
        privileges,
        self_only,
        control,
    })
}

fn control_word(word: &str) -> Option<Control> {
    match word.to_ascii_lowercase().as_str() {
        "stop" => Some(Control::Stop),
        "continue" => Some(Control::Continue),
        "break" => Some(Control::Break),
        _ => None,
    }
}

/// slapd's `<access>`: `[[real]self]{<level>|<priv>}`, with whether the `self` modifier was given
/// (`selfwrite`: the access holds only for values that are the requester's own DN). `realself` is
/// taken as `self`: the value is compared with the DN the operation runs as.
fn parse_level(word: &str) -> Option<(Modifier, Mask, bool)> {
    let lower = word.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("realself")
        .or_else(|| lower.strip_prefix("self"));
    if let Some(rest) = rest.filter(|r| !r.is_empty()) {
        return parse_access(rest).map(|(m, mask)| (m, mask, true));
    }
    parse_access(word).map(|(m, mask)| (m, mask, false))
}

/// A level word or a `=`/`+`/`-` privilege set; None if the word is neither.
pub fn parse_access(word: &str) -> Option<(Modifier, Mask)> {
    let lower = word.to_ascii_lowercase();
    let level = match lower.as_str() {
        "none" => Some(0),
        "disclose" => Some(privileges::DISCLOSE),
        "auth" => Some(privileges::AUTH),
        "compare" => Some(privileges::COMPARE),
        "search" => Some(privileges::SEARCH),
        "read" => Some(privileges::READ),
        "add" => Some(privileges::ADD),
        "delete" => Some(privileges::DELETE),
        "write" => Some(privileges::WRITE),
        "manage" => Some(privileges::MANAGE),
        _ => None,
    };
    if let Some(level) = level {
        return Some((Modifier::Set, privileges::cumulative(level)));
    }
    let modifier = match lower.chars().next()? {
        '=' => Modifier::Set,
        '+' => Modifier::Add,
        '-' => Modifier::Remove,
        _ => return None,
    };
    let mut mask = 0;
    for c in lower.chars().skip(1) {
        mask |= match c {
            'm' => privileges::MANAGE,
            'w' => privileges::ADD | privileges::DELETE,
            'a' => privileges::ADD,
            'z' => privileges::DELETE,
            'r' => privileges::READ,
            's' => privileges::SEARCH,
            'c' => privileges::COMPARE,
            'x' => privileges::AUTH,
            'd' => privileges::DISCLOSE,
            '0' => 0,
            _ => return None,
        };
    }
    Some((modifier, mask))
}

fn parse_who(schema: &Schema, word: &str) -> Result<WhoSpec, String> {
    let lower = word.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("real") {
        // `realanonymous`, `realusers`, `realself`, `realdn...=`, `realdnattr=` (not `real` alone).
        let is_real = matches!(rest, "anonymous" | "users" | "self")
            || rest.starts_with("dn=")
            || rest.starts_with("dn.")
            || rest.starts_with("dnattr=");
        if is_real {
            let inner = parse_who(schema, &word["real".len()..])?;
            return Ok(WhoSpec::Real(Box::new(inner)));
        }
    }
    match lower.as_str() {
        "*" => return Ok(WhoSpec::Anyone),
        "anonymous" => return Ok(WhoSpec::Anonymous),
        "users" => return Ok(WhoSpec::Users),
        "self" => return Ok(WhoSpec::SelfEntry),
        _ => {}
    }
    let (key, value) = word
        .split_once('=')
        .ok_or_else(|| "unknown <who> clause or access level".to_string())?;
    let lower = key.to_ascii_lowercase();
    if lower == "group" || lower.starts_with("group/") || lower.starts_with("group.") {
        return group(schema, key, value);
    }
    let (name, style) = lower.split_once('.').unwrap_or((lower.as_str(), ""));
    match name {
        "dn" => {
            // `dn.STYLE,expand=`, `dn.expand=` (base), and `dn.regex=` with `$N` references expand.
            let (style, expand) = match style.split_once(',') {
                Some((style, "expand")) => (style, true),
                Some(_) => return Err("unknown DN style modifier (only expand)".into()),
                None if style == "expand" => ("", true),
                None => (style, false),
            };
            if expand || (style == "regex" && super::expand::has_references(value)) {
                let expanding = super::expand::Expanding::new(style, value)?;
                return Ok(WhoSpec::DnExpand(Box::new(expanding)));
            }
            Ok(WhoSpec::Dn(dn_pattern(schema, style, value)?))
        }
        "dnattr" if style.is_empty() => dnattr(schema, value),
        "set" => Ok(WhoSpec::Set(Box::new(super::sets::SetClause::new(
            schema, style, value,
        )?))),
        "peername" => peername(style, value),
        "ssf" | "transport_ssf" | "tls_ssf" | "sasl_ssf" => {
            let n = value
                .parse()
                .map_err(|_| "ssf needs a number".to_string())?;
            let kind = match name {
                "ssf" => Ssf::Any,
                "transport_ssf" => Ssf::Transport,
                "tls_ssf" => Ssf::Tls,
                _ => Ssf::Sasl,
            };
            Ok(WhoSpec::Ssf(kind, n))
        }
        _ => Err("unknown <who> clause".into()),
    }
}

/// `dnattr=<attr>`: an attribute type of DN (or name and optional UID) syntax with an equality rule,
/// as slapd requires.
fn dnattr(schema: &Schema, value: &str) -> Result<WhoSpec, String> {
    let at = schema
        .attribute_type(value)
        .ok_or_else(|| format!("unknown attribute type {value:?}"))?;
    if !matches!(at.syntax.as_str(), DN_SYNTAX | NAME_UID_SYNTAX) || at.equality.is_none() {
        return Err(format!(
            "dnattr {value:?}: the attribute needs distinguished name syntax and an equality rule"
        ));
    }
    Ok(WhoSpec::DnAttr(at.name().to_string()))
}

const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";
pub(super) const NAME_UID_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.34";

/// `group[/objectClass[/attribute]][.exact]="dn"`; groupOfNames and member by default.
fn group(schema: &Schema, key: &str, value: &str) -> Result<WhoSpec, String> {
    let (key, style) = key.split_once('.').unwrap_or((key, ""));
    if !matches!(style.to_ascii_lowercase().as_str(), "" | "exact" | "base") {
        return Err("only exact group DNs are supported".into());
    }
    let mut parts = key.split('/').skip(1);
    let class = parts.next().unwrap_or("groupOfNames");
    let attr = parts.next().unwrap_or("member");
    let class = schema
        .object_class(class)
        .ok_or_else(|| format!("unknown object class {class:?}"))?
        .name()
        .to_string();
    let attr = schema
        .attribute_type(attr)
        .ok_or_else(|| format!("unknown attribute type {attr:?}"))?
        .name()
        .to_string();
    Ok(WhoSpec::Group {
        dn: normalize(schema, value)?,
        class,
        attr,
    })
}

fn peername(style: &str, value: &str) -> Result<WhoSpec, String> {
    match style {
        "ip" => {
            let (addr, mask) = match value.split_once('%') {
                Some((a, m)) => (a, Some(m)),
                None => (value, None),
            };
            // slapd writes `IP:port`; a port is not compared here.
            let addr = addr.split(':').next().unwrap_or(addr);
            let addr: IpAddr = addr.parse().map_err(|_| "bad IP address".to_string())?;
            let mask = match mask {
                Some(m) => Some(m.parse().map_err(|_| "bad IP mask".to_string())?),
                None => None,
            };
            Ok(WhoSpec::PeerIp { addr, mask })
        }
        "path" => Ok(WhoSpec::PeerPath(value.to_string())),
        _ => Err("only peername.ip and peername.path are supported".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_debian_default() {
        let schema = Schema::builtin();
        let rule = parse_rule(
            &schema,
            0,
            "to attrs=userPassword by self write by anonymous auth by * none",
        )
        .unwrap();
        assert_eq!(
            rule.what.attrs,
            Some(vec![AttrItem::Type("userPassword".into())])
        );
        assert_eq!(rule.bys.len(), 3);
        assert!(matches!(rule.bys[0].who[0], WhoSpec::SelfEntry));
        assert_eq!(
            rule.bys[0].privileges,
            privileges::cumulative(privileges::WRITE)
        );
        assert_eq!(rule.bys[2].privileges, 0);
    }

    #[test]
    fn parses_styles_sets_and_controls() {
        let schema = Schema::builtin();
        let rule = parse_rule(
            &schema,
            3,
            r#"access to dn.subtree="ou=People, dc=example,dc=com" filter=(objectClass=person) attrs=entry,@person
               by group/groupOfNames/member="cn=admins,dc=example,dc=com" =wrscxd continue
               by peername.ip=127.0.0.1%255.0.0.0 ssf=71 +r break
               by dn.regex="^uid=[^,]+,dc=example,dc=com$" -w"#,
        )
        .unwrap();
        assert!(matches!(rule.what.dn, DnPattern::Subtree(_)));
        assert!(rule.what.filter.is_some());
        let attrs = rule.what.attrs.as_ref().unwrap();
        assert!(attrs.contains(&AttrItem::Entry));
        assert!(attrs.contains(&AttrItem::Type("sn".into())));
        assert_eq!(rule.bys[0].control, Control::Continue);
        assert_eq!(rule.bys[1].who.len(), 2);
        assert_eq!(rule.bys[1].modifier, Modifier::Add);
        assert_eq!(rule.bys[1].control, Control::Break);
        assert_eq!(rule.bys[2].modifier, Modifier::Remove);
        assert_eq!(rule.bys[2].privileges, privileges::WRITE);
    }

    #[test]
    fn errors_name_rule_and_word() {
        let schema = Schema::builtin();
        let cases = [
            ("to * by * reed", "access rule 2", "\"reed\""),
            ("to bogus=1 by * read", "access rule 2", "\"bogus=1\""),
            (
                "to attrs=noSuchAttr by * read",
                "access rule 2",
                "noSuchAttr",
            ),
            ("to * by * read sometimes", "access rule 2", "\"sometimes\""),
            ("to *", "access rule 2", "no \"by\""),
            ("from * by * read", "access rule 2", "\"from\""),
            ("to dn.sideways=x by * read", "access rule 2", "dn.sideways"),
        ];
        for (text, rule, word) in cases {
            let err = parse_rule(&schema, 2, text).unwrap_err();
            assert!(err.contains(rule) && err.contains(word), "{text}: {err}");
        }
    }
}
