//! LdapMessage to BER, written straight into the output vector.

use canopy_ber::{tag, Writer};

use crate::message::*;

/// APPLICATION tags of the protocolOp CHOICE (RFC 4511 §4.2 to §4.13).
pub(crate) mod op_tag {
    pub const BIND_REQUEST: u8 = 0x60;
    pub const BIND_RESPONSE: u8 = 0x61;
    pub const UNBIND_REQUEST: u8 = 0x42;
    pub const SEARCH_REQUEST: u8 = 0x63;
    pub const SEARCH_RESULT_ENTRY: u8 = 0x64;
    pub const SEARCH_RESULT_DONE: u8 = 0x65;
    pub const SEARCH_RESULT_REFERENCE: u8 = 0x73;
    pub const MODIFY_REQUEST: u8 = 0x66;
    pub const MODIFY_RESPONSE: u8 = 0x67;
    pub const ADD_REQUEST: u8 = 0x68;
    pub const ADD_RESPONSE: u8 = 0x69;
    pub const DEL_REQUEST: u8 = 0x4a;
    pub const DEL_RESPONSE: u8 = 0x6b;
    pub const MODIFY_DN_REQUEST: u8 = 0x6c;
    pub const MODIFY_DN_RESPONSE: u8 = 0x6d;
    pub const COMPARE_REQUEST: u8 = 0x6e;
    pub const COMPARE_RESPONSE: u8 = 0x6f;
    pub const ABANDON_REQUEST: u8 = 0x50;
    pub const EXTENDED_REQUEST: u8 = 0x77;
    pub const EXTENDED_RESPONSE: u8 = 0x78;
    pub const INTERMEDIATE_RESPONSE: u8 = 0x79;
}

/// Context-specific tags inside operations.
pub(crate) mod ctx {
    pub const CONTROLS: u8 = 0xa0;
    pub const REFERRAL: u8 = 0xa3;
    pub const AUTH_SIMPLE: u8 = 0x80;
    pub const AUTH_SASL: u8 = 0xa3;
    pub const SERVER_SASL_CREDS: u8 = 0x87;
    pub const NEW_SUPERIOR: u8 = 0x80;
    pub const EXOP_REQUEST_NAME: u8 = 0x80;
    pub const EXOP_REQUEST_VALUE: u8 = 0x81;
    pub const EXOP_RESPONSE_NAME: u8 = 0x8a;
    pub const EXOP_RESPONSE_VALUE: u8 = 0x8b;
    pub const INTERMEDIATE_NAME: u8 = 0x80;
    pub const INTERMEDIATE_VALUE: u8 = 0x81;
}

impl LdapMessage {
    /// Appends the BER encoding of this message to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out).constructed(tag::SEQUENCE, |w| {
            w.integer(tag::INTEGER, i64::from(self.message_id));
            encode_op(w, &self.op);
            if !self.controls.is_empty() {
                w.constructed(ctx::CONTROLS, |w| {
                    for control in &self.controls {
                        encode_control(w, control);
                    }
                });
            }
        });
    }
}

pub(crate) fn encode_control(w: &mut Writer<'_>, control: &Control) {
    w.constructed(tag::SEQUENCE, |w| {
        w.octet_string(tag::OCTET_STRING, control.oid.as_bytes());
        // DEFAULT FALSE: DER-style omission, which every peer accepts.
        if control.critical {
            w.boolean(tag::BOOLEAN, true);
        }
        if let Some(value) = &control.value {
            w.octet_string(tag::OCTET_STRING, value);
        }
    });
}

fn encode_op(w: &mut Writer<'_>, op: &ProtocolOp) {
    use op_tag::*;
    match op {
        ProtocolOp::BindRequest(req) => w.constructed(BIND_REQUEST, |w| {
            w.integer(tag::INTEGER, i64::from(req.version));
            w.octet_string(tag::OCTET_STRING, &req.name);
            match &req.auth {
                BindAuth::Simple(password) => w.octet_string(ctx::AUTH_SIMPLE, password),
                BindAuth::Sasl {
                    mechanism,
                    credentials,
                } => w.constructed(ctx::AUTH_SASL, |w| {
                    w.octet_string(tag::OCTET_STRING, mechanism.as_bytes());
                    if let Some(credentials) = credentials {
                        w.octet_string(tag::OCTET_STRING, credentials);
                    }
                }),
            }
        }),
        ProtocolOp::BindResponse(resp) => w.constructed(BIND_RESPONSE, |w| {
            encode_result_fields(w, &resp.result);
            if let Some(creds) = &resp.server_sasl_creds {
                w.octet_string(ctx::SERVER_SASL_CREDS, creds);
            }
        }),
        ProtocolOp::UnbindRequest => w.octet_string(UNBIND_REQUEST, &[]),
        ProtocolOp::SearchRequest(req) => w.constructed(SEARCH_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.base);
            w.integer(tag::ENUMERATED, scope_code(req.scope));
            w.integer(tag::ENUMERATED, deref_code(req.deref));
            w.integer(tag::INTEGER, i64::from(req.size_limit));
            w.integer(tag::INTEGER, i64::from(req.time_limit));
            w.boolean(tag::BOOLEAN, req.types_only);
            req.filter.encode_ber(w);
            w.constructed(tag::SEQUENCE, |w| {
                for attr in &req.attributes {
                    w.octet_string(tag::OCTET_STRING, attr.as_bytes());
                }
            });
        }),
        ProtocolOp::SearchResultEntry(entry) => w.constructed(SEARCH_RESULT_ENTRY, |w| {
            w.octet_string(tag::OCTET_STRING, &entry.dn);
            encode_attribute_list(w, &entry.attributes);
        }),
        ProtocolOp::SearchResultDone(result) => encode_result(w, SEARCH_RESULT_DONE, result),
        ProtocolOp::SearchResultReference(uris) => w.constructed(SEARCH_RESULT_REFERENCE, |w| {
            for uri in uris {
                w.octet_string(tag::OCTET_STRING, uri.as_bytes());
            }
        }),
        ProtocolOp::ModifyRequest(req) => w.constructed(MODIFY_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.dn);
            w.constructed(tag::SEQUENCE, |w| {
                for change in &req.changes {
                    w.constructed(tag::SEQUENCE, |w| {
                        w.integer(tag::ENUMERATED, modify_operation_code(change.operation));
                        encode_attribute(w, &change.modification);
                    });
                }
            });
        }),
        ProtocolOp::ModifyResponse(result) => encode_result(w, MODIFY_RESPONSE, result),
        ProtocolOp::AddRequest(req) => w.constructed(ADD_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.dn);
            encode_attribute_list(w, &req.attributes);
        }),
        ProtocolOp::AddResponse(result) => encode_result(w, ADD_RESPONSE, result),
        ProtocolOp::DelRequest(dn) => w.octet_string(DEL_REQUEST, dn),
        ProtocolOp::DelResponse(result) => encode_result(w, DEL_RESPONSE, result),
        ProtocolOp::ModifyDnRequest(req) => w.constructed(MODIFY_DN_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.dn);
            w.octet_string(tag::OCTET_STRING, &req.new_rdn);
            w.boolean(tag::BOOLEAN, req.delete_old_rdn);
            if let Some(superior) = &req.new_superior {
                w.octet_string(ctx::NEW_SUPERIOR, superior);
            }
        }),
        ProtocolOp::ModifyDnResponse(result) => encode_result(w, MODIFY_DN_RESPONSE, result),
        ProtocolOp::CompareRequest(req) => w.constructed(COMPARE_REQUEST, |w| {
            w.octet_string(tag::OCTET_STRING, &req.dn);
            w.constructed(tag::SEQUENCE, |w| {
                w.octet_string(tag::OCTET_STRING, req.attr.as_bytes());
                w.octet_string(tag::OCTET_STRING, &req.value);
            });
        }),
        ProtocolOp::CompareResponse(result) => encode_result(w, COMPARE_RESPONSE, result),
        ProtocolOp::AbandonRequest(id) => w.integer(ABANDON_REQUEST, i64::from(*id)),
        ProtocolOp::ExtendedRequest(req) => w.constructed(EXTENDED_REQUEST, |w| {
            w.octet_string(ctx::EXOP_REQUEST_NAME, req.name.as_bytes());
            if let Some(value) = &req.value {
                w.octet_string(ctx::EXOP_REQUEST_VALUE, value);
            }
        }),
        ProtocolOp::ExtendedResponse(resp) => w.constructed(EXTENDED_RESPONSE, |w| {
            encode_result_fields(w, &resp.result);
            if let Some(name) = &resp.name {
                w.octet_string(ctx::EXOP_RESPONSE_NAME, name.as_bytes());
            }
            if let Some(value) = &resp.value {
                w.octet_string(ctx::EXOP_RESPONSE_VALUE, value);
            }
        }),
        ProtocolOp::IntermediateResponse(resp) => w.constructed(INTERMEDIATE_RESPONSE, |w| {
            if let Some(name) = &resp.name {
                w.octet_string(ctx::INTERMEDIATE_NAME, name.as_bytes());
            }
            if let Some(value) = &resp.value {
                w.octet_string(ctx::INTERMEDIATE_VALUE, value);
            }
        }),
    }
}

fn encode_result(w: &mut Writer<'_>, op_tag: u8, result: &LdapResult) {
    w.constructed(op_tag, |w| encode_result_fields(w, result));
}

/// The COMPONENTS OF LDAPResult, shared by every response.
fn encode_result_fields(w: &mut Writer<'_>, result: &LdapResult) {
    w.integer(tag::ENUMERATED, i64::from(result.code.code()));
    w.octet_string(tag::OCTET_STRING, &result.matched_dn);
    w.octet_string(tag::OCTET_STRING, result.message.as_bytes());
    if !result.referral.is_empty() {
        w.constructed(ctx::REFERRAL, |w| {
            for uri in &result.referral {
                w.octet_string(tag::OCTET_STRING, uri.as_bytes());
            }
        });
    }
}

fn encode_attribute_list(w: &mut Writer<'_>, attributes: &[PartialAttribute]) {
    w.constructed(tag::SEQUENCE, |w| {
        for attribute in attributes {
            encode_attribute(w, attribute);
        }
    });
}

fn encode_attribute(w: &mut Writer<'_>, attribute: &PartialAttribute) {
    w.constructed(tag::SEQUENCE, |w| {
        w.octet_string(tag::OCTET_STRING, attribute.name.as_bytes());
        w.constructed(tag::SET, |w| {
            for value in &attribute.values {
                w.octet_string(tag::OCTET_STRING, value);
            }
        });
    });
}

pub(crate) fn scope_code(scope: SearchScope) -> i64 {
    match scope {
        SearchScope::BaseObject => 0,
        SearchScope::SingleLevel => 1,
        SearchScope::WholeSubtree => 2,
        SearchScope::SubordinateSubtree => 3,
    }
}

pub(crate) fn deref_code(deref: DerefAliases) -> i64 {
    match deref {
        DerefAliases::Never => 0,
        DerefAliases::InSearching => 1,
        DerefAliases::FindingBaseObj => 2,
        DerefAliases::Always => 3,
    }
}

pub(crate) fn modify_operation_code(op: ModifyOperation) -> i64 {
    match op {
        ModifyOperation::Add => 0,
        ModifyOperation::Delete => 1,
        ModifyOperation::Replace => 2,
        ModifyOperation::Increment => 3,
    }
}
