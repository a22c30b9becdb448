//! slapd's `dynlist-attrset` lines, parsed and checked against the schema, and the LDAP URLs the
//! expansion follows (`ldap:///BASE?ATTRS?SCOPE?FILTER`).

use canopy_proto::{Dn, Filter, SearchScope};
use canopy_schema::{NormDn, Schema};

/// One `dynlist-attrset`: entries of `group_class` (within `restrict`) are expanded through the URLs
/// in their `url_attr` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrSet {
    /// The text as configured, for messages.
    pub text: String,
    pub group_class: String,
    /// slapd's optional `<URI>`: only entries within its base and scope that match its filter expand.
    pub restrict: Option<Url>,
    pub url_attr: String,
    /// None, or only mappings: a dynamic list (the attributes of the entries found are added, the
    /// mapped ones under their new name). Otherwise a dynamic group: the DNs of the entries found
    /// become values of each member attribute.
    pub members: Vec<MemberMap>,
}

/// A `member-ad[+memberOf-ad[@static-oc]]` of a dynamic group, or a `mapped-ad:member-ad` of a
/// dynamic list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMap {
    /// `mapped-ad:`: in a list, values of `member_attr` found are added as this attribute.
    pub mapped: Option<String>,
    pub member_attr: String,
    /// The attribute computed on the members: the DNs of the dynamic groups that find them (and of
    /// the `static_class` groups whose `member_attr` lists them).
    pub memberof_attr: Option<String>,
    pub static_class: Option<String>,
    /// `@<static-oc>*`: groups nest. memberOf lists every group that holds the entry at any depth
    /// (through static members and URLs alike), and a group's members, when asked for together with
    /// memberOf, include the members of the groups it holds, at any depth (slapd 2.5).
    pub nested: bool,
}

/// An LDAP URL of this database: `ldap:///BASE?ATTRS?SCOPE?FILTER` (RFC 4516 without host or
/// extensions). As libldap reads one, a missing scope is `base` and a missing filter
/// `(objectClass=*)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub base: Dn,
    pub attrs: Vec<String>,
    pub scope: SearchScope,
    pub filter: Filter,
}

/// The overlay's settings: its attribute sets, in configuration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynlist {
    pub sets: Vec<AttrSet>,
}

impl Url {
    /// Parses an `ldap:///...` URL; a host, extensions or a bad part are errors.
    pub fn parse(text: &str) -> Result<Url, String> {
        let rest = text
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case("ldap://"))
            .and_then(|_| text.get(7..))
            .ok_or_else(|| format!("{text:?} is not an ldap:/// URL"))?;
        let path = match rest.split_once('/') {
            Some(("", path)) => path,
            None if rest.is_empty() => "",
            _ => return Err(format!("{text:?}: a host is not supported (ldap:///...)")),
        };
        let parts: Vec<&str> = path.split('?').collect();
        if parts.len() > 5 {
            return Err(format!("{text:?}: too many '?' parts"));
        }
        let part = |i: usize| parts.get(i).copied().unwrap_or("");
        if !part(4).is_empty() {
            return Err(format!("{text:?}: extensions are not supported"));
        }
        let decode =
            |s: &str| canopy_proto::url::percent_decode(s).map_err(|e| format!("{text:?}: {e}"));
        let base = decode(part(0))?;
        let base = Dn::parse(base.as_bytes()).map_err(|e| format!("{text:?}: base: {e}"))?;
        let mut attrs = Vec::new();
        for attr in part(1).split(',').filter(|a| !a.is_empty()) {
            attrs.push(decode(attr)?);
        }
        let scope = match part(2).to_ascii_lowercase().as_str() {
            "" | "base" => SearchScope::BaseObject,
            "one" | "onelevel" => SearchScope::SingleLevel,
            "sub" | "subtree" => SearchScope::WholeSubtree,
            "children" | "subord" | "subordinate" => SearchScope::SubordinateSubtree,
            other => return Err(format!("{text:?}: unknown scope {other:?}")),
        };
        let filter = match decode(part(3))? {
            f if f.is_empty() => Filter::Present("objectClass".into()),
            f if f.starts_with('(') => {
                Filter::parse(&f).map_err(|e| format!("{text:?}: filter: {e}"))?
            }
            f => Filter::parse(&format!("({f})")).map_err(|e| format!("{text:?}: filter: {e}"))?,
        };
        Ok(Url {
            base,
            attrs,
            scope,
            filter,
        })
    }

    /// Whether the entry named `ndn` lies within this URL's base and scope (`base` normalized).
    pub fn holds(base: &NormDn, scope: SearchScope, ndn: &NormDn) -> bool {
        match scope {
            SearchScope::BaseObject => base == ndn,
            SearchScope::SingleLevel => ndn.parent().is_some_and(|p| p == *base),
            SearchScope::WholeSubtree => base.is_suffix_of(ndn),
            SearchScope::SubordinateSubtree => base != ndn && base.is_suffix_of(ndn),
        }
    }
}

impl AttrSet {
    /// Whether the set makes dynamic groups (a member attribute that is not a mapping).
    pub fn is_group(&self) -> bool {
        self.members.iter().any(|m| m.mapped.is_none())
    }

    /// Parses slapd's `<group-oc> [<URI>] <URL-ad> [[<mapped-ad>:]<member-ad>[+<memberOf-ad>[@<static-oc>[*]]] ...]`.
    /// `*` (nested groups) follows a static class only, as in slapd's grammar; a set mixing mappings
    /// and member attributes is refused.
    pub fn parse(text: &str) -> Result<AttrSet, String> {
        let mut words = text.split_whitespace();
        let group_class = words
            .next()
            .ok_or("expected \"<group-oc> [<URI>] <URL-ad> [<member-ad>...]\"")?
            .to_string();
        let mut next = words
            .next()
            .ok_or_else(|| format!("{text:?}: the URL attribute is missing"))?;
        let mut restrict = None;
        if next
            .get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("ldap://"))
        {
            restrict = Some(Url::parse(next)?);
            next = words
                .next()
                .ok_or_else(|| format!("{text:?}: the URL attribute is missing"))?;
        }
        let url_attr = next.to_string();
        let mut members = Vec::new();
        for word in words {
            let (mapped, word) = match word.split_once(':') {
                Some((mapped, rest)) => (Some(mapped), rest),
                None => (None, word),
            };
            if mapped.is_some() && word.contains('+') {
                return Err(format!(
                    "{word:?}: a mapped attribute (<mapped-ad>:<member-ad>) takes no memberOf"
                ));
            }
            let (word, nested) = match word.strip_suffix('*') {
                Some(rest) if rest.contains('@') => (rest, true),
                Some(_) => {
                    return Err(format!(
                        "{word:?}: '*' (nested groups) follows a static class: \
                         member+memberOf@static-oc*"
                    ))
                }
                None => (word, false),
            };
            let (member, memberof) = match word.split_once('+') {
                Some((member, rest)) => (member, Some(rest)),
                None => (word, None),
            };
            if member.contains('@') {
                return Err(format!(
                    "{word:?}: the memberOf attribute follows '+' (member+memberOf[@static-oc])"
                ));
            }
            let (memberof_attr, static_class) = match memberof {
                None => (None, None),
                Some(rest) => match rest.split_once('@') {
                    Some((attr, class)) => (Some(attr), Some(class)),
                    None => (Some(rest), None),
                },
            };
            if [Some(member), memberof_attr, static_class, mapped]
                .into_iter()
                .flatten()
                .any(str::is_empty)
            {
                return Err(format!("{word:?}: an empty name"));
            }
            members.push(MemberMap {
                mapped: mapped.map(str::to_string),
                member_attr: member.to_string(),
                memberof_attr: memberof_attr.map(str::to_string),
                static_class: static_class.map(str::to_string),
                nested,
            });
        }
        let mapped = members.iter().filter(|m| m.mapped.is_some()).count();
        if mapped > 0 && mapped < members.len() {
            return Err(format!(
                "{text:?}: mapped attributes (<mapped-ad>:<member-ad>) and member attributes in \
                 one attrset are not supported"
            ));
        }
        Ok(AttrSet {
            text: text.to_string(),
            group_class,
            restrict,
            url_attr,
            members,
        })
    }

    /// Checks the names against `schema` and the restricting URL's base against `suffix`.
    pub fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        let class = |name: &str| {
            schema
                .object_class(name)
                .map(|_| ())
                .ok_or_else(|| format!("{:?}: unknown object class {name:?}", self.text))
        };
        let attribute = |name: &str| {
            schema
                .attribute_type(name)
                .ok_or_else(|| format!("{:?}: unknown attribute {name:?}", self.text))
        };
        class(&self.group_class)?;
        let url = attribute(&self.url_attr)?;
        if !descends_from(schema, url.name(), "labeledURI") {
            return Err(format!(
                "{:?}: {:?} must be labeledURI or a subtype of it",
                self.text, self.url_attr
            ));
        }
        if let Some(restrict) = &self.restrict {
            let base = schema
                .normalize_dn(&restrict.base)
                .map_err(|e| format!("{:?}: URI base: {e}", self.text))?;
            if !suffix.is_suffix_of(&base) && !base.is_root() {
                return Err(format!(
                    "{:?}: the URI's base is outside this database",
                    self.text
                ));
            }
        }
        for map in &self.members {
            if let Some(mapped) = &map.mapped {
                attribute(mapped)?;
                attribute(&map.member_attr)?;
                continue;
            }
            for name in [Some(&map.member_attr), map.memberof_attr.as_ref()]
                .into_iter()
                .flatten()
            {
                let at = attribute(name)?;
                if at.syntax != DN_SYNTAX {
                    return Err(format!(
                        "{:?}: {name:?} does not hold DNs (DN syntax)",
                        self.text
                    ));
                }
            }
            if let Some(static_class) = &map.static_class {
                class(static_class)?;
            }
        }
        Ok(())
    }
}

const DN_SYNTAX: &str = "1.3.6.1.4.1.1466.115.121.1.12";

/// Whether attribute type `name` is `ancestor` or below it.
fn descends_from(schema: &Schema, name: &str, ancestor: &str) -> bool {
    let mut current = schema.attribute_type(name);
    for _ in 0..64 {
        let Some(at) = current else { return false };
        if at.names.iter().any(|n| n.eq_ignore_ascii_case(ancestor)) {
            return true;
        }
        current = at.sup.as_deref().and_then(|s| schema.attribute_type(s));
    }
    false
}

impl Dynlist {
    /// Parses the `attrset` lines.
    pub fn parse<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<Dynlist, String> {
        let sets = lines
            .into_iter()
            .map(AttrSet::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if sets.is_empty() {
            return Err("attrset: at least one is required".into());
        }
        Ok(Dynlist { sets })
    }

    pub fn check(&self, schema: &Schema, suffix: &NormDn) -> Result<(), String> {
        self.sets
            .iter()
            .try_for_each(|set| set.check(schema, suffix))
    }

    /// The member attributes of the nested sets (`@<static-oc>*`).
    pub fn nested_member_attrs(&self) -> impl Iterator<Item = &str> {
        self.sets
            .iter()
            .flat_map(|s| &s.members)
            .filter(|m| m.nested)
            .map(|m| m.member_attr.as_str())
    }

    /// The memberOf attributes the sets compute (to define when the schema lacks them).
    pub fn memberof_attrs(&self) -> impl Iterator<Item = &str> {
        self.sets
            .iter()
            .flat_map(|s| &s.members)
            .filter_map(|m| m.memberof_attr.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_url(text: &str, expected: Result<(&str, &[&str], SearchScope, &str), &str>) {
        match (Url::parse(text), expected) {
            (Ok(url), Ok((base, attrs, scope, filter))) => {
                assert_eq!(url.base.to_string(), base, "{text}");
                assert_eq!(url.attrs, attrs, "{text}");
                assert_eq!(url.scope, scope, "{text}");
                assert_eq!(url.filter, Filter::parse(filter).unwrap(), "{text}");
            }
            (Err(e), Err(needle)) => assert!(e.contains(needle), "{text}: {e}"),
            (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn urls() {
        use SearchScope::*;
        check_url(
            "ldap:///ou=people,dc=example,dc=com??sub?(objectClass=person)",
            Ok((
                "ou=people,dc=example,dc=com",
                &[],
                WholeSubtree,
                "(objectClass=person)",
            )),
        );
        check_url(
            "LDAP:///dc=example,dc=com?mail,cn?one?uid=a%2A",
            Ok((
                "dc=example,dc=com",
                &["mail", "cn"],
                SingleLevel,
                "(uid=a*)",
            )),
        );
        check_url(
            "ldap:///cn=x,dc=example,dc=com",
            Ok(("cn=x,dc=example,dc=com", &[], BaseObject, "(objectClass=*)")),
        );
        check_url("ldap://host/dc=example,dc=com", Err("host"));
        check_url("http:///dc=x", Err("not an ldap"));
        check_url("ldap:///dc=x??sub?(uid=a", Err("filter"));
        check_url("ldap:///dc=x??deep", Err("unknown scope"));
        check_url("ldap:///dc=x????ext", Err("extensions"));
        check_url("ldap:///dc=x?????", Err("too many"));
        check_url("ldap:///not a dn", Err("base"));
    }

    #[test]
    fn attrsets() {
        let set = AttrSet::parse("groupOfURLs memberURL").unwrap();
        assert_eq!(
            (set.group_class.as_str(), set.url_attr.as_str()),
            ("groupOfURLs", "memberURL")
        );
        assert!(set.members.is_empty() && set.restrict.is_none());
        let nested = AttrSet::parse("groupOfURLs memberURL member+memberOf@groupOfNames*").unwrap();
        assert!(nested.members[0].nested);
        assert_eq!(
            nested.members[0].static_class.as_deref(),
            Some("groupOfNames")
        );

        let set = AttrSet::parse(
            "groupOfURLs ldap:///ou=groups,dc=example,dc=com??one memberURL member+memberOf@groupOfNames uniqueMember",
        )
        .unwrap();
        assert_eq!(set.restrict.unwrap().scope, SearchScope::SingleLevel);
        assert_eq!(
            set.members,
            vec![
                MemberMap {
                    mapped: None,
                    member_attr: "member".into(),
                    memberof_attr: Some("memberOf".into()),
                    static_class: Some("groupOfNames".into()),
                    nested: false,
                },
                MemberMap {
                    mapped: None,
                    member_attr: "uniqueMember".into(),
                    memberof_attr: None,
                    static_class: None,
                    nested: false,
                },
            ]
        );

        for (text, needle) in [
            ("", "expected"),
            ("groupOfURLs", "URL attribute is missing"),
            ("groupOfURLs ldap:///dc=x??sub", "URL attribute is missing"),
            (
                "groupOfURLs memberURL cn:member member",
                "mapped attributes",
            ),
            (
                "groupOfURLs memberURL cn:member+memberOf",
                "takes no memberOf",
            ),
            ("groupOfURLs memberURL :member", "empty"),
            (
                "groupOfURLs memberURL member+memberOf*",
                "follows a static class",
            ),
            ("groupOfURLs memberURL member*", "follows a static class"),
            ("groupOfURLs memberURL member+memberOf@*", "empty"),
            ("groupOfURLs memberURL member@memberOf", "follows '+'"),
            ("groupOfURLs memberURL member+", "empty"),
            ("groupOfURLs ldap://h/dc=x memberURL", "host"),
        ] {
            let e = AttrSet::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn schema_checks() {
        let schema = Schema::builtin();
        let suffix = schema
            .normalize_dn(&Dn::parse(b"dc=example,dc=com").unwrap())
            .unwrap();
        let ok = |text: &str| AttrSet::parse(text).unwrap().check(&schema, &suffix);
        ok("groupOfURLs memberURL member+dgMemberOf@groupOfNames").unwrap();
        ok("labeledURIObject labeledURI").unwrap();
        ok("labeledURIObject labeledURI description:cn").unwrap();
        let list = AttrSet::parse("labeledURIObject labeledURI description:cn").unwrap();
        assert!(!list.is_group());
        assert_eq!(list.members[0].mapped.as_deref(), Some("description"));
        for (text, needle) in [
            ("groupOfURL memberURL", "unknown object class"),
            ("groupOfURLs memberUR", "unknown attribute"),
            ("groupOfURLs cn", "labeledURI"),
            ("groupOfURLs memberURL cn", "DN syntax"),
            (
                "groupOfURLs memberURL member+dgMemberOf@nothing",
                "unknown object class",
            ),
            ("groupOfURLs ldap:///dc=other??sub memberURL", "outside"),
        ] {
            let e = ok(text).unwrap_err();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }
}
