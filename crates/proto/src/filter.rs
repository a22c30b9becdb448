//! RFC 4511 §4.5.1.7 search filters, their RFC 4515 string form and BER form.

/// RFC 4511 §4.5.1.7 Filter. Attribute descriptions are kept as the client sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    And(Vec<Filter>),
    Or(Vec<Filter>),
    Not(Box<Filter>),
    Equality(String, Vec<u8>),
    Substrings(SubstringFilter),
    GreaterOrEqual(String, Vec<u8>),
    LessOrEqual(String, Vec<u8>),
    Present(String),
    Approx(String, Vec<u8>),
    Extensible(MatchingRuleAssertion),
    /// An item that is well-formed BER but makes no sense (an unknown choice, substrings out of order, an
    /// extensible match with neither rule nor type): it evaluates to Undefined, as slapd treats it, instead of
    /// failing the whole search. Only decoding produces it.
    Undefined,
}

/// RFC 4511 §4.5.1.7.2 SubstringFilter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstringFilter {
    pub attr: String,
    pub initial: Option<Vec<u8>>,
    pub any: Vec<Vec<u8>>,
    pub final_: Option<Vec<u8>>,
}

/// RFC 4511 §4.5.1.7.7 MatchingRuleAssertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchingRuleAssertion {
    pub rule: Option<String>,
    pub attr: Option<String>,
    pub value: Vec<u8>,
    pub dn_attributes: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("bad search filter at offset {offset}: {reason}")]
    Syntax { offset: usize, reason: &'static str },
    #[error("filter nested deeper than {0} levels")]
    TooDeep(usize),
}

mod ber;
pub(crate) mod string;

/// Filters nested deeper than this are refused by `Filter::parse`.
pub const MAX_PARSE_DEPTH: usize = 64;

#[cfg(test)]
pub(crate) mod tests;
