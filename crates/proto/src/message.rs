//! RFC 4511 §4 protocol messages as owned Rust types, with their BER encoding and decoding.
//!
//! DNs and attribute values are kept as bytes: a malformed DN is an operation error
//! (invalidDNSyntax) decided by the server, never a decoding failure of the whole PDU.

use crate::filter::Filter;
use crate::result::ResultCode;

/// RFC 4511 §4.1.1 LDAPMessage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapMessage {
    pub message_id: i32,
    pub op: ProtocolOp,
    pub controls: Vec<Control>,
}

/// RFC 4511 §4.1.11 Control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    pub oid: String,
    pub critical: bool,
    pub value: Option<Vec<u8>>,
}

/// RFC 4511 §4.2 to §4.13: the protocolOp CHOICE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolOp {
    BindRequest(BindRequest),
    BindResponse(BindResponse),
    UnbindRequest,
    SearchRequest(SearchRequest),
    SearchResultEntry(SearchResultEntry),
    SearchResultDone(LdapResult),
    SearchResultReference(Vec<String>),
    ModifyRequest(ModifyRequest),
    ModifyResponse(LdapResult),
    AddRequest(AddRequest),
    AddResponse(LdapResult),
    DelRequest(Vec<u8>),
    DelResponse(LdapResult),
    ModifyDnRequest(ModifyDnRequest),
    ModifyDnResponse(LdapResult),
    CompareRequest(CompareRequest),
    CompareResponse(LdapResult),
    AbandonRequest(i32),
    ExtendedRequest(ExtendedRequest),
    ExtendedResponse(ExtendedResponse),
    IntermediateResponse(IntermediateResponse),
}

/// RFC 4511 §4.1.9 LDAPResult.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdapResult {
    pub code: ResultCode,
    pub matched_dn: Vec<u8>,
    pub message: String,
    pub referral: Vec<String>,
}

impl LdapResult {
    pub fn new(code: ResultCode, message: impl Into<String>) -> LdapResult {
        LdapResult {
            code,
            matched_dn: Vec::new(),
            message: message.into(),
            referral: Vec::new(),
        }
    }
    pub fn success() -> LdapResult {
        LdapResult::new(ResultCode::Success, "")
    }
}

/// RFC 4511 §4.2 BindRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindRequest {
    pub version: i32,
    pub name: Vec<u8>,
    pub auth: BindAuth,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindAuth {
    /// [0] simple
    Simple(Vec<u8>),
    /// [3] sasl
    Sasl {
        mechanism: String,
        credentials: Option<Vec<u8>>,
    },
}

/// RFC 4511 §4.2.2 BindResponse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindResponse {
    pub result: LdapResult,
    pub server_sasl_creds: Option<Vec<u8>>,
}

/// RFC 4511 §4.5.1 scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchScope {
    BaseObject,
    SingleLevel,
    WholeSubtree,
    /// draft-sermersheim-ldap-subordinate-scope (OpenLDAP "children", value 3).
    SubordinateSubtree,
}

/// RFC 4511 §4.5.1 derefAliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DerefAliases {
    Never,
    InSearching,
    FindingBaseObj,
    Always,
}

/// RFC 4511 §4.5.1 SearchRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub base: Vec<u8>,
    pub scope: SearchScope,
    pub deref: DerefAliases,
    pub size_limit: i32,
    pub time_limit: i32,
    pub types_only: bool,
    pub filter: Filter,
    pub attributes: Vec<String>,
}

/// RFC 4511 §4.1.7 PartialAttribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialAttribute {
    pub name: String,
    pub values: Vec<Vec<u8>>,
}

/// RFC 4511 §4.5.2 SearchResultEntry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResultEntry {
    pub dn: Vec<u8>,
    pub attributes: Vec<PartialAttribute>,
}

/// RFC 4511 §4.6 operation (plus RFC 4525 increment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifyOperation {
    Add,
    Delete,
    Replace,
    Increment,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub operation: ModifyOperation,
    pub modification: PartialAttribute,
}

/// RFC 4511 §4.6 ModifyRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifyRequest {
    pub dn: Vec<u8>,
    pub changes: Vec<Change>,
}

/// RFC 4511 §4.7 AddRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddRequest {
    pub dn: Vec<u8>,
    pub attributes: Vec<PartialAttribute>,
}

/// RFC 4511 §4.9 ModifyDNRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModifyDnRequest {
    pub dn: Vec<u8>,
    pub new_rdn: Vec<u8>,
    pub delete_old_rdn: bool,
    pub new_superior: Option<Vec<u8>>,
}

/// RFC 4511 §4.10 CompareRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareRequest {
    pub dn: Vec<u8>,
    pub attr: String,
    pub value: Vec<u8>,
}

/// RFC 4511 §4.12 ExtendedRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendedRequest {
    pub name: String,
    pub value: Option<Vec<u8>>,
}

/// RFC 4511 §4.12 ExtendedResponse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendedResponse {
    pub result: LdapResult,
    pub name: Option<String>,
    pub value: Option<Vec<u8>>,
}

/// RFC 4511 §4.13 IntermediateResponse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntermediateResponse {
    pub name: Option<String>,
    pub value: Option<Vec<u8>>,
}
