//! Which attributes a search returns: RFC 4511 §4.5.1.8 attribute selection (`*`, `+`, `1.1`, names) and
//! RFC 4529 `@objectClass` lists.

use canopy_core::classes::with_superclasses;
use canopy_core::desc::AttrDesc;
use canopy_schema::Schema;

/// A parsed attribute list.
#[derive(Debug, Clone)]
pub struct Selection {
    pub all_user: bool,
    pub all_operational: bool,
    pub named: Vec<AttrDesc>,
}

impl Selection {
    pub fn parse(schema: &Schema, attributes: &[String]) -> Selection {
        let mut selection = Selection {
            all_user: attributes.is_empty(),
            all_operational: false,
            named: Vec::new(),
        };
        for name in attributes {
            match name.as_str() {
                "*" => selection.all_user = true,
                "+" => selection.all_operational = true,
                "1.1" => {}
                // RFC 4529: every attribute the class and its superclasses allow; unknown classes select nothing.
                other if other.starts_with('@') => {
                    let class = other
                        .strip_prefix('@')
                        .and_then(|name| schema.object_class(name));
                    for class in class
                        .map(|c| with_superclasses(schema, c))
                        .unwrap_or_default()
                    {
                        for name in class.must.iter().chain(&class.may) {
                            if let Ok(desc) = AttrDesc::parse(schema, name) {
                                selection.named.push(desc);
                            }
                        }
                    }
                }
                // Unknown names select nothing, as RFC 4511 §4.5.1.8 says. A language range
                // (`name;lang-en-`, RFC 3866 §3.3) selects every tag it begins, as in slapd.
                other => {
                    if let Ok(desc) = AttrDesc::parse_for_filter(schema, other) {
                        selection.named.push(desc);
                    }
                }
            }
        }
        // A list may name one attribute thousands of times; every returned attribute is tested against
        // it, so each description is kept once.
        let mut seen = std::collections::HashSet::new();
        selection
            .named
            .retain(|d| seen.insert(d.to_desc_string().to_ascii_lowercase()));
        selection
    }

    /// Only the plain "all user attributes" case: the stored user section can be sent as it is.
    pub fn is_all_user_only(&self) -> bool {
        self.all_user && !self.all_operational && self.named.is_empty()
    }

    /// Whether an attribute with this canonical description is selected.
    pub fn wants(&self, schema: &Schema, desc: &str) -> bool {
        let Ok(have) = AttrDesc::parse(schema, desc) else {
            return false;
        };
        let operational = schema
            .attribute_type(&have.type_name)
            .is_some_and(|at| at.is_operational());
        // Canopy's per-attribute CSNs go only to whoever names them (a Canopy consumer), never
        // with `+`: slapd consumers and ordinary clients do not know the attribute.
        let hidden = have
            .type_name
            .eq_ignore_ascii_case(canopy_directory::attrcsn::ATTR_CSN);
        if !hidden && ((operational && self.all_operational) || (!operational && self.all_user)) {
            return true;
        }
        let Some(have_type) = schema.attribute_type(&have.type_name) else {
            return false;
        };
        let have_options = have.options.join(";");
        self.named.iter().any(|want| {
            schema
                .attribute_type(&want.type_name)
                .is_some_and(|want_type| schema.is_subtype_of(have_type, want_type))
                && want.options_match(&have_options)
        })
    }

    /// Whether a computed attribute (by canonical name) is asked for, explicitly or through `+`.
    pub fn wants_computed(&self, name: &str) -> bool {
        self.all_operational
            || self
                .named
                .iter()
                .any(|d| d.type_name.eq_ignore_ascii_case(name))
    }
}
