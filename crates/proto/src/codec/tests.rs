//! Codec tests: real PDUs captured from OpenLDAP's tools (`-d -1`), hand-assembled RFC vectors,
//! generated round trips and framing edge cases.

use super::*;
use crate::decoding::DecodeLimits;
use crate::filter::tests::random_filter;
use crate::filter::{Filter, MatchingRuleAssertion};
use crate::message::*;
use crate::result::ResultCode;
use crate::testutil::{hex, unhex, Gen};

fn pm(name: &str, values: &[&[u8]]) -> PartialAttribute {
    PartialAttribute {
        name: name.to_owned(),
        values: values.iter().map(|v| v.to_vec()).collect(),
    }
}

fn msg(message_id: i32, op: ProtocolOp) -> LdapMessage {
    LdapMessage {
        message_id,
        op,
        controls: Vec::new(),
    }
}

fn result(code: ResultCode, matched: &str, message: &str) -> LdapResult {
    LdapResult {
        code,
        matched_dn: matched.into(),
        message: message.into(),
        referral: Vec::new(),
    }
}

/// PDUs captured from ldapsearch/ldapmodify/ldapcompare/ldapwhoami/ldappasswd/ldapdelete against
/// Debian's slapd 2.5, and the decoded form they must have. All use minimal lengths, so encoding
/// the decoded form must give the same bytes back.
fn captured() -> Vec<(&'static str, LdapMessage)> {
    let base = b"dc=example,dc=com".to_vec();
    vec![
        (
            "30 2c 02 01 01 60 27 02 01 03 04 1a 63 6e 3d 61 64 6d 69 6e 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 80 06 73 65 63 72 65 74",
            msg(1, ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: b"cn=admin,dc=example,dc=com".to_vec(),
                auth: BindAuth::Simple(b"secret".to_vec()),
            })),
        ),
        (
            "30 0c 02 01 01 61 07 0a 01 00 04 00 04 00",
            msg(1, ProtocolOp::BindResponse(BindResponse { result: LdapResult::success(), server_sasl_creds: None })),
        ),
        (
            "30 81 96 02 01 02 63 6c 04 11 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 0a 01 02 0a 01 00 02 01 00 02 01 00 01 01 00 a0 3e a4 0c 04 02 63 6e 30 06 80 01 4a 82 01 72 a2 09 a5 07 04 02 73 6e 04 01 61 a1 23 87 0b 6f 62 6a 65 63 74 43 6c 61 73 73 a9 14 81 08 32 2e 35 2e 31 33 2e 35 82 02 63 6e 83 01 78 84 01 ff 30 08 04 02 63 6e 04 02 73 6e a0 23 30 21 04 16 31 2e 32 2e 38 34 30 2e 31 31 33 35 35 36 2e 31 2e 34 2e 33 31 39 04 07 30 05 02 01 0a 04 00",
            LdapMessage {
                message_id: 2,
                op: ProtocolOp::SearchRequest(SearchRequest {
                    base: base.clone(),
                    scope: SearchScope::WholeSubtree,
                    deref: DerefAliases::Never,
                    size_limit: 0,
                    time_limit: 0,
                    types_only: false,
                    filter: Filter::parse("(&(cn=J*r)(!(sn>=a))(|(objectClass=*)(cn:dn:2.5.13.5:=x)))").unwrap(),
                    attributes: vec!["cn".into(), "sn".into()],
                }),
                controls: vec![Control {
                    oid: "1.2.840.113556.1.4.319".into(),
                    critical: false,
                    value: Some(unhex("30 05 02 01 0a 04 00")),
                }],
            },
        ),
        (
            "30 31 02 01 02 65 07 0a 01 00 04 00 04 00 a0 23 30 21 04 16 31 2e 32 2e 38 34 30 2e 31 31 33 35 35 36 2e 31 2e 34 2e 33 31 39 04 07 30 05 02 01 00 04 00",
            LdapMessage {
                message_id: 2,
                op: ProtocolOp::SearchResultDone(LdapResult::success()),
                controls: vec![Control {
                    oid: "1.2.840.113556.1.4.319".into(),
                    critical: false,
                    value: Some(unhex("30 05 02 01 00 04 00")),
                }],
            },
        ),
        ("30 05 02 01 03 42 00", msg(3, ProtocolOp::UnbindRequest)),
        (
            "30 6c 02 01 02 66 67 04 1e 63 6e 3d 61 5c 2c 62 2b 73 6e 3d 63 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 30 45 30 1b 0a 01 00 30 16 04 0b 64 65 73 63 72 69 70 74 69 6f 6e 31 07 04 05 68 65 6c 6c 6f 30 16 0a 01 02 30 11 04 05 74 69 74 6c 65 31 08 04 02 74 31 04 02 74 32 30 0e 0a 01 01 30 09 04 05 74 69 74 6c 65 31 00",
            msg(2, ProtocolOp::ModifyRequest(ModifyRequest {
                dn: b"cn=a\\,b+sn=c,dc=example,dc=com".to_vec(),
                changes: vec![
                    Change { operation: ModifyOperation::Add, modification: pm("description", &[b"hello"]) },
                    Change { operation: ModifyOperation::Replace, modification: pm("title", &[b"t1", b"t2"]) },
                    Change { operation: ModifyOperation::Delete, modification: pm("title", &[]) },
                ],
            })),
        ),
        ("30 0c 02 01 02 67 07 0a 01 00 04 00 04 00", msg(2, ProtocolOp::ModifyResponse(LdapResult::success()))),
        (
            "30 52 02 01 03 68 4d 04 18 63 6e 3d 6e 65 77 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 30 31 30 17 04 0b 6f 62 6a 65 63 74 43 6c 61 73 73 31 08 04 06 70 65 72 73 6f 6e 30 0b 04 02 63 6e 31 05 04 03 6e 65 77 30 09 04 02 73 6e 31 03 04 01 6e",
            msg(3, ProtocolOp::AddRequest(AddRequest {
                dn: b"cn=new,dc=example,dc=com".to_vec(),
                attributes: vec![pm("objectClass", &[b"person"]), pm("cn", &[b"new"]), pm("sn", &[b"n"])],
            })),
        ),
        ("30 0c 02 01 03 69 07 0a 01 00 04 00 04 00", msg(3, ProtocolOp::AddResponse(LdapResult::success()))),
        (
            "30 3e 02 01 04 6c 39 04 18 63 6e 3d 6e 65 77 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 04 07 63 6e 3d 6e 65 77 32 01 01 ff 80 11 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d",
            msg(4, ProtocolOp::ModifyDnRequest(ModifyDnRequest {
                dn: b"cn=new,dc=example,dc=com".to_vec(),
                new_rdn: b"cn=new2".to_vec(),
                delete_old_rdn: true,
                new_superior: Some(base.clone()),
            })),
        ),
        ("30 0c 02 01 04 6d 07 0a 01 00 04 00 04 00", msg(4, ProtocolOp::ModifyDnResponse(LdapResult::success()))),
        (
            "30 2c 02 01 02 6e 27 04 19 63 6e 3d 6e 65 77 32 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 30 0a 04 02 63 6e 04 04 6e 65 77 32",
            msg(2, ProtocolOp::CompareRequest(CompareRequest {
                dn: b"cn=new2,dc=example,dc=com".to_vec(),
                attr: "cn".into(),
                value: b"new2".to_vec(),
            })),
        ),
        (
            "30 0c 02 01 02 6f 07 0a 01 06 04 00 04 00",
            msg(2, ProtocolOp::CompareResponse(result(ResultCode::CompareTrue, "", ""))),
        ),
        (
            "30 1e 02 01 02 77 19 80 17 31 2e 33 2e 36 2e 31 2e 34 2e 31 2e 34 32 30 33 2e 31 2e 31 31 2e 33",
            msg(2, ProtocolOp::ExtendedRequest(ExtendedRequest { name: crate::oid::EXOP_WHO_AM_I.into(), value: None })),
        ),
        (
            "30 2b 02 01 02 78 26 0a 01 00 04 00 04 00 8b 1d 64 6e 3a 63 6e 3d 61 64 6d 69 6e 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d",
            msg(2, ProtocolOp::ExtendedResponse(ExtendedResponse {
                result: LdapResult::success(),
                name: None,
                value: Some(b"dn:cn=admin,dc=example,dc=com".to_vec()),
            })),
        ),
        (
            "30 44 02 01 02 77 3f 80 17 31 2e 33 2e 36 2e 31 2e 34 2e 31 2e 34 32 30 33 2e 31 2e 31 31 2e 31 81 24 30 22 80 19 63 6e 3d 6e 65 77 32 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 82 05 6e 65 77 70 77",
            msg(2, ProtocolOp::ExtendedRequest(ExtendedRequest {
                name: crate::oid::EXOP_PASSWORD_MODIFY.into(),
                value: Some(unhex("30 22 80 19 63 6e 3d 6e 65 77 32 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 82 05 6e 65 77 70 77")),
            })),
        ),
        (
            "30 1e 02 01 02 4a 19 63 6e 3d 6e 65 77 32 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d",
            msg(2, ProtocolOp::DelRequest(b"cn=new2,dc=example,dc=com".to_vec())),
        ),
        ("30 0c 02 01 02 6b 07 0a 01 00 04 00 04 00", msg(2, ProtocolOp::DelResponse(LdapResult::success()))),
        (
            "30 40 02 01 02 64 3b 04 1f 63 6e 3d 61 5c 32 43 62 2b 73 6e 3d 63 2c 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 30 18 30 0b 04 02 63 6e 31 05 04 03 61 2c 62 30 09 04 02 73 6e 31 03 04 01 63",
            msg(2, ProtocolOp::SearchResultEntry(SearchResultEntry {
                dn: b"cn=a\\2Cb+sn=c,dc=example,dc=com".to_vec(),
                attributes: vec![pm("cn", &[b"a,b"]), pm("sn", &[b"c"])],
            })),
        ),
        (
            "30 1d 02 01 02 65 18 0a 01 20 04 11 64 63 3d 65 78 61 6d 70 6c 65 2c 64 63 3d 63 6f 6d 04 00",
            msg(2, ProtocolOp::SearchResultDone(result(ResultCode::NoSuchObject, "dc=example,dc=com", ""))),
        ),
    ]
}

/// Vectors assembled by hand from RFC 4511, RFC 4525 and RFC 3062 for what the tools above do not send.
fn hand_assembled() -> Vec<(&'static str, LdapMessage)> {
    vec![
        (
            // SASL bind with credentials.
            "30 16 02 01 01 60 11 02 01 03 04 00 a3 0a 04 05 50 4c 41 49 4e 04 01 00",
            msg(1, ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: Vec::new(),
                auth: BindAuth::Sasl { mechanism: "PLAIN".into(), credentials: Some(vec![0]) },
            })),
        ),
        (
            "30 0f 02 01 01 60 0a 02 01 03 04 00 a3 03 04 01 58",
            msg(1, ProtocolOp::BindRequest(BindRequest {
                version: 3,
                name: Vec::new(),
                auth: BindAuth::Sasl { mechanism: "X".into(), credentials: None },
            })),
        ),
        (
            // saslBindInProgress with serverSaslCreds [7].
            "30 10 02 01 01 61 0b 0a 01 0e 04 00 04 00 87 02 72 3d",
            msg(1, ProtocolOp::BindResponse(BindResponse {
                result: result(ResultCode::SaslBindInProgress, "", ""),
                server_sasl_creds: Some(b"r=".to_vec()),
            })),
        ),
        (
            // referral [3] in an LDAPResult.
            "30 1c 02 01 05 67 17 0a 01 0a 04 00 04 02 6e 6f a3 0c 04 0a 6c 64 61 70 3a 2f 2f 68 2f 78",
            msg(5, ProtocolOp::ModifyResponse(LdapResult {
                code: ResultCode::Referral,
                matched_dn: Vec::new(),
                message: "no".into(),
                referral: vec!["ldap://h/x".into()],
            })),
        ),
        (
            "30 13 02 01 06 73 0e 04 05 6c 64 61 70 3a 04 05 6c 64 61 70 73",
            msg(6, ProtocolOp::SearchResultReference(vec!["ldap:".into(), "ldaps".into()])),
        ),
        (
            // scope 3 (subordinate subtree), derefAlways, typesOnly, limits, no attributes.
            "30 1c 02 01 07 63 17 04 00 0a 01 03 0a 01 03 02 01 0a 02 02 01 2c 01 01 ff 87 01 61 30 00",
            msg(7, ProtocolOp::SearchRequest(SearchRequest {
                base: Vec::new(),
                scope: SearchScope::SubordinateSubtree,
                deref: DerefAliases::Always,
                size_limit: 10,
                time_limit: 300,
                types_only: true,
                filter: Filter::Present("a".into()),
                attributes: Vec::new(),
            })),
        ),
        (
            // RFC 4525 increment.
            "30 1a 02 01 08 66 15 04 00 30 11 30 0f 0a 01 03 30 0a 04 01 6e 31 05 04 03 2d 31 30",
            msg(8, ProtocolOp::ModifyRequest(ModifyRequest {
                dn: Vec::new(),
                changes: vec![Change { operation: ModifyOperation::Increment, modification: pm("n", &[b"-10"]) }],
            })),
        ),
        ("30 06 02 01 09 50 01 05", msg(9, ProtocolOp::AbandonRequest(5))),
        ("30 07 02 01 09 50 02 00 80", msg(9, ProtocolOp::AbandonRequest(128))),
        (
            // Notice of Disconnection: message ID 0, responseName [10].
            "30 24 02 01 00 78 1f 0a 01 02 04 00 04 00 8a 16 31 2e 33 2e 36 2e 31 2e 34 2e 31 2e 31 34 36 36 2e 32 30 30 33 36",
            msg(0, ProtocolOp::ExtendedResponse(ExtendedResponse {
                result: result(ResultCode::ProtocolError, "", ""),
                name: Some(crate::oid::NOTICE_OF_DISCONNECTION.into()),
                value: None,
            })),
        ),
        (
            "30 0c 02 01 0a 79 07 80 01 31 81 02 00 01",
            msg(10, ProtocolOp::IntermediateResponse(IntermediateResponse { name: Some("1".into()), value: Some(vec![0, 1]) })),
        ),
        ("30 05 02 01 0a 79 00", msg(10, ProtocolOp::IntermediateResponse(IntermediateResponse { name: None, value: None }))),
        (
            // critical control without a value (ManageDsaIT) on a delete.
            "30 26 02 01 0b 4a 01 78 a0 1e 30 1c 04 17 32 2e 31 36 2e 38 34 30 2e 31 2e 31 31 33 37 33 30 2e 33 2e 34 2e 32 01 01 ff",
            LdapMessage {
                message_id: 11,
                op: ProtocolOp::DelRequest(b"x".to_vec()),
                controls: vec![Control { oid: crate::oid::CONTROL_MANAGE_DSA_IT.into(), critical: true, value: None }],
            },
        ),
        (
            // Largest message ID.
            "30 08 02 04 7f ff ff ff 42 00",
            msg(i32::MAX, ProtocolOp::UnbindRequest),
        ),
        (
            // Extensible filter without a type, absolute true (&), absolute false (|).
            "30 22 02 01 0c 63 1d 04 00 0a 01 00 0a 01 00 02 01 00 02 01 00 01 01 00 a1 08 a9 06 81 01 72 83 01 76 30 00",
            msg(12, ProtocolOp::SearchRequest(SearchRequest {
                base: Vec::new(),
                scope: SearchScope::BaseObject,
                deref: DerefAliases::Never,
                size_limit: 0,
                time_limit: 0,
                types_only: false,
                filter: Filter::Or(vec![Filter::Extensible(MatchingRuleAssertion {
                    rule: Some("r".into()),
                    attr: None,
                    value: b"v".to_vec(),
                    dn_attributes: false,
                })]),
                attributes: Vec::new(),
            })),
        ),
    ]
}

#[test]
fn vectors_decode_and_encode_exactly() {
    for (pdu, expected) in captured().into_iter().chain(hand_assembled()) {
        let bytes = unhex(pdu);
        let decoded = LdapMessage::decode(&bytes, &DecodeLimits::default())
            .unwrap_or_else(|e| panic!("{pdu}: {e}"));
        assert_eq!(decoded, expected, "{pdu}");
        let mut out = Vec::new();
        expected.encode(&mut out);
        assert_eq!(hex(&out), hex(&bytes));
        assert_eq!(frame_len(&bytes, 1 << 20), Ok(Some(bytes.len())));
    }
}

#[test]
fn lenient_forms_are_accepted() {
    let cases: &[(&str, LdapMessage)] = &[
        // Non-minimal 4-octet lengths as written by older libldap, BOOLEAN TRUE as 0x01.
        (
            "30 84 00 00 00 17 02 01 01 4a 01 78 a0 84 00 00 00 0b 30 09 04 04 31 2e 32 33 01 01 01",
            LdapMessage {
                message_id: 1,
                op: ProtocolOp::DelRequest(b"x".to_vec()),
                controls: vec![Control { oid: "1.23".into(), critical: true, value: None }],
            },
        ),
        // Explicit criticality FALSE, non-minimal message ID.
        (
            "30 13 02 02 00 01 4a 01 78 a0 0a 30 08 04 01 31 01 01 00 04 00",
            LdapMessage {
                message_id: 1,
                op: ProtocolOp::DelRequest(b"x".to_vec()),
                controls: vec![Control { oid: "1".into(), critical: false, value: Some(Vec::new()) }],
            },
        ),
    ];
    for (pdu, expected) in cases {
        assert_eq!(
            &LdapMessage::decode(&unhex(pdu), &DecodeLimits::default()).unwrap(),
            expected,
            "{pdu}"
        );
    }
}

#[test]
fn malformed_messages_are_errors_with_the_id_when_known() {
    let cases: &[(&str, Option<i32>, &str)] = &[
        ("", None, "end of data"),
        ("30", None, "end of data"),
        ("04 03 02 01 01", None, "expected tag 0x30"),
        ("30 03 02 01", None, "exceeds"),
        ("30 03 04 01 01", None, "expected tag 0x02"),
        ("30 03 02 01 ff", None, "message ID -1"),
        ("30 07 02 05 01 00 00 00 00", None, "out of range"),
        ("30 05 02 01 07 71 00", Some(7), "unknown protocolOp tag 0x71"),
        ("30 05 02 01 07 7f 00", Some(7), "multi-byte"),
        ("30 03 02 01 07", Some(7), "end of data"),
        ("30 06 02 01 07 42 01 00", Some(7), "UnbindRequest must be empty"),
        ("30 07 02 01 07 42 00 04 00", Some(7), "after controls"),
        ("30 05 02 01 07 42 00 00", Some(7), "trailing bytes"),
        ("30 06 02 01 07 42 00", None, "exceeds"),
        ("30 80 02 01 07 42 00 00 00", None, "indefinite"),
        ("30 09 02 01 08 50 02 ff ff a0 00", Some(8), "abandoned message ID"),
        ("30 0c 02 01 03 60 07 02 01 03 04 00 81 00", Some(3), "authentication choice 0x81"),
        ("30 0c 02 01 03 60 07 02 01 03 04 00 80 01", Some(3), "exceeds"),
        ("30 1c 02 01 07 63 17 04 00 0a 01 04 0a 01 03 02 01 0a 02 02 01 2c 01 01 ff 87 01 61 30 00", Some(7), "scope 4"),
        ("30 1c 02 01 07 63 17 04 00 0a 01 00 0a 01 00 02 01 ff 02 02 01 2c 01 01 ff 87 01 61 30 00", Some(7), "sizeLimit -1"),
        ("30 1f 02 01 08 66 1a 04 00 30 16 30 14 0a 01 04 30 0f 04 01 6e 31 0a 04 03 2d 31 30 04 03 2d 31 30", Some(8), "modify operation 4"),
        ("30 0c 02 01 09 4a 01 78 a0 04 30 02 04 80", Some(9), "indefinite"),
        ("30 0d 02 01 09 4a 01 78 a0 05 30 03 04 01 ff", Some(9), "not valid UTF-8"),
    ];
    for (pdu, id, reason) in cases {
        let err = LdapMessage::decode(&unhex(pdu), &DecodeLimits::default()).expect_err(pdu);
        assert_eq!(err.message_id, *id, "{pdu}: {err}");
        assert!(err.reason.contains(reason), "{pdu}: {err}");
    }
    // An empty Controls SEQUENCE OF is legal BER and means no controls.
    let empty = LdapMessage::decode(
        &unhex("30 07 02 01 07 42 00 a0 00"),
        &DecodeLimits::default(),
    );
    assert_eq!(empty.unwrap(), msg(7, ProtocolOp::UnbindRequest));
}

/// Well-framed but senseless filter items are Undefined, as slapd treats them; the search itself stands.
#[test]
fn senseless_filter_items_are_undefined() {
    let cases: &[(&str, &str)] = &[
        ("8a 01 61", "(?=undefined)"),
        ("a4 05 04 01 61 30 00", "(?=undefined)"),
        ("a4 0c 04 02 63 6e 30 06 80 01 61 80 01 62", "(?=undefined)"),
        ("a4 0c 04 02 63 6e 30 06 82 01 61 81 01 62", "(?=undefined)"),
        ("a4 09 04 02 63 6e 30 03 83 01 61", "(?=undefined)"),
        ("a9 03 83 01 78", "(?=undefined)"),
        ("a3 07 04 01 ff 04 02 61 62", "(?=undefined)"),
        (
            "a2 12 87 02 63 6e a3 0c 04 03 75 69 64 04 05 61 6c 69 63 65",
            "(!(cn=*))",
        ),
        ("a0 08 87 01 61 8a 03 63 6e 3d", "(&(a=*)(?=undefined))"),
    ];
    for (filter, expected) in cases {
        let frame = search_with_filter(&unhex(filter));
        let message = LdapMessage::decode(&frame, &DecodeLimits::default()).expect(filter);
        let ProtocolOp::SearchRequest(req) = message.op else {
            panic!("{filter}: not a search");
        };
        assert_eq!(req.filter.to_string(), *expected, "{filter}");
    }
    // Broken BER inside a filter still ends the message.
    for broken in ["a3 04 04 02 63 6e", "a4 04 04 02 63 6e", "a2 00"] {
        let bytes = unhex(broken);
        let mut r = canopy_ber::Reader::new(&bytes);
        assert!(
            Filter::decode_ber(&mut r, &DecodeLimits::default()).is_err(),
            "{broken}"
        );
    }
}

fn nested_nots(depth: usize) -> Vec<u8> {
    // Sizes are computed inside out, then the headers are written outside in.
    let mut sizes = vec![3usize];
    for level in 0..depth {
        sizes.push(canopy_ber::encoded_len(sizes[level]));
    }
    let mut filter = Vec::with_capacity(sizes[depth]);
    for level in (0..depth).rev() {
        canopy_ber::write_header(&mut filter, 0xa2, sizes[level]);
    }
    filter.extend_from_slice(&unhex("87 01 61"));
    search_with_filter(&filter)
}

/// A whole SearchRequest message (ID 42, base "", no attributes) around the BER of `filter`.
fn search_with_filter(filter: &[u8]) -> Vec<u8> {
    let mut search = unhex("04 00 0a 01 00 0a 01 00 02 01 00 02 01 00 01 01 00");
    search.extend_from_slice(filter);
    search.extend_from_slice(&[0x30, 0x00]);
    let mut op = Vec::new();
    canopy_ber::write_header(&mut op, 0x63, search.len());
    op.extend_from_slice(&search);
    let mut frame = Vec::new();
    canopy_ber::write_header(&mut frame, 0x30, op.len() + 3);
    frame.extend_from_slice(&[0x02, 0x01, 0x2a]);
    frame.extend_from_slice(&op);
    frame
}

#[test]
fn filter_depth_is_limited() {
    let limits = DecodeLimits {
        max_filter_depth: 10,
    };
    // Depth 10: nine NOTs around one present filter.
    assert!(LdapMessage::decode(&nested_nots(9), &limits).is_ok());
    let err = LdapMessage::decode(&nested_nots(10), &limits).unwrap_err();
    assert_eq!(err.message_id, Some(42));
    // A filter bomb far deeper than any stack allows is refused without recursion blowing up.
    let err = LdapMessage::decode(&nested_nots(200_000), &DecodeLimits::default()).unwrap_err();
    assert_eq!(err.message_id, Some(42));
}

fn random_result(g: &mut Gen) -> LdapResult {
    LdapResult {
        code: ResultCode::from_code([0, 1, 2, 10, 14, 32, 49, 68, 80, 122, 4096][g.below(11)]),
        matched_dn: g.bytes(),
        message: g.text(),
        referral: (0..g.below(3)).map(|_| g.text()).collect(),
    }
}

fn random_attributes(g: &mut Gen) -> Vec<PartialAttribute> {
    (0..g.below(5))
        .map(|_| PartialAttribute {
            name: g.attr(),
            values: (0..g.below(4)).map(|_| g.bytes()).collect(),
        })
        .collect()
}

fn opt_bytes(g: &mut Gen) -> Option<Vec<u8>> {
    g.chance(50).then(|| g.bytes())
}

fn random_message(g: &mut Gen) -> LdapMessage {
    let op = match g.below(21) {
        0 => ProtocolOp::BindRequest(BindRequest {
            version: g.below(4) as i32,
            name: g.bytes(),
            auth: if g.chance(50) {
                BindAuth::Simple(g.bytes())
            } else {
                BindAuth::Sasl {
                    mechanism: g.text(),
                    credentials: opt_bytes(g),
                }
            },
        }),
        1 => ProtocolOp::BindResponse(BindResponse {
            result: random_result(g),
            server_sasl_creds: opt_bytes(g),
        }),
        2 => ProtocolOp::UnbindRequest,
        3 => ProtocolOp::SearchRequest(SearchRequest {
            base: g.bytes(),
            scope: [
                SearchScope::BaseObject,
                SearchScope::SingleLevel,
                SearchScope::WholeSubtree,
                SearchScope::SubordinateSubtree,
            ][g.below(4)],
            deref: [
                DerefAliases::Never,
                DerefAliases::InSearching,
                DerefAliases::FindingBaseObj,
                DerefAliases::Always,
            ][g.below(4)],
            size_limit: (g.next() >> 33) as i32,
            time_limit: g.below(1000) as i32,
            types_only: g.chance(50),
            filter: random_filter(g, 3),
            attributes: (0..g.below(4)).map(|_| g.attr()).collect(),
        }),
        4 => ProtocolOp::SearchResultEntry(SearchResultEntry {
            dn: g.bytes(),
            attributes: random_attributes(g),
        }),
        5 => ProtocolOp::SearchResultDone(random_result(g)),
        6 => ProtocolOp::SearchResultReference((0..1 + g.below(3)).map(|_| g.text()).collect()),
        7 => ProtocolOp::ModifyRequest(ModifyRequest {
            dn: g.bytes(),
            changes: random_attributes(g)
                .into_iter()
                .map(|modification| Change {
                    operation: [
                        ModifyOperation::Add,
                        ModifyOperation::Delete,
                        ModifyOperation::Replace,
                        ModifyOperation::Increment,
                    ][g.below(4)],
                    modification,
                })
                .collect(),
        }),
        8 => ProtocolOp::ModifyResponse(random_result(g)),
        9 => ProtocolOp::AddRequest(AddRequest {
            dn: g.bytes(),
            attributes: random_attributes(g),
        }),
        10 => ProtocolOp::AddResponse(random_result(g)),
        11 => ProtocolOp::DelRequest(g.bytes()),
        12 => ProtocolOp::DelResponse(random_result(g)),
        13 => ProtocolOp::ModifyDnRequest(ModifyDnRequest {
            dn: g.bytes(),
            new_rdn: g.bytes(),
            delete_old_rdn: g.chance(50),
            new_superior: opt_bytes(g),
        }),
        14 => ProtocolOp::ModifyDnResponse(random_result(g)),
        15 => ProtocolOp::CompareRequest(CompareRequest {
            dn: g.bytes(),
            attr: g.attr(),
            value: g.bytes(),
        }),
        16 => ProtocolOp::CompareResponse(random_result(g)),
        17 => ProtocolOp::AbandonRequest((g.next() >> 33) as i32),
        18 => ProtocolOp::ExtendedRequest(ExtendedRequest {
            name: g.text(),
            value: opt_bytes(g),
        }),
        19 => ProtocolOp::ExtendedResponse(ExtendedResponse {
            result: random_result(g),
            name: g.chance(50).then(|| g.text()),
            value: opt_bytes(g),
        }),
        _ => ProtocolOp::IntermediateResponse(IntermediateResponse {
            name: g.chance(50).then(|| g.text()),
            value: opt_bytes(g),
        }),
    };
    let controls = (0..g.below(3))
        .map(|_| Control {
            oid: g.text(),
            critical: g.chance(50),
            value: opt_bytes(g),
        })
        .collect();
    LdapMessage {
        message_id: (g.next() >> 33) as i32,
        op,
        controls,
    }
}

#[test]
fn generated_messages_round_trip() {
    let mut g = Gen::new(4511);
    let mut stream = Vec::new();
    let mut messages = Vec::new();
    for _ in 0..3000 {
        let message = random_message(&mut g);
        let mut first = Vec::new();
        message.encode(&mut first);
        let decoded = LdapMessage::decode(&first, &DecodeLimits::default())
            .unwrap_or_else(|e| panic!("{message:?}: {e}"));
        assert_eq!(decoded, message);
        let mut second = Vec::new();
        decoded.encode(&mut second);
        assert_eq!(first, second);
        stream.extend_from_slice(&first);
        messages.push(message);
    }
    // The same messages back to back are split again by frame_len, whatever the read sizes.
    let mut offset = 0;
    for message in &messages {
        let rest = &stream[offset..];
        let len = frame_len(rest, usize::MAX).unwrap().unwrap();
        assert_eq!(frame_len(&rest[..len - 1], usize::MAX), Ok(None));
        assert_eq!(
            &LdapMessage::decode(&rest[..len], &DecodeLimits::default()).unwrap(),
            message
        );
        offset += len;
    }
    assert_eq!(offset, stream.len());
}

#[test]
fn truncations_of_valid_messages_never_panic() {
    let mut g = Gen::new(7);
    for _ in 0..300 {
        let mut bytes = Vec::new();
        random_message(&mut g).encode(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(LdapMessage::decode(&bytes[..cut], &DecodeLimits::default()).is_err());
        }
        // Flipping a byte either still decodes or fails cleanly.
        for i in 0..bytes.len().min(64) {
            let mut flipped = bytes.clone();
            flipped[i] ^= 1 << (g.below(8));
            let _ = LdapMessage::decode(&flipped, &DecodeLimits::default());
        }
    }
}

#[test]
fn frame_len_edges() {
    type Expected = Result<Option<usize>, FrameError>;
    let cases: &[(&str, usize, Expected)] = &[
        ("", 100, Ok(None)),
        ("30", 100, Ok(None)),
        ("30 03 02 01", 100, Ok(None)),
        ("30 03 02 01 01", 100, Ok(Some(5))),
        ("30 03 02 01 01 30", 100, Ok(Some(5))),
        ("30 00", 100, Ok(Some(2))),
        ("30 81", 1000, Ok(None)),
        ("30 81 80", 1000, Ok(None)),
        ("30 82 01", 1000, Ok(None)),
        ("30 84 00 00 00 03 02 01 01", 100, Ok(Some(9))),
        ("30 84 00 00 00 03 02 01", 100, Ok(None)),
        ("30 03 02 01 01", 5, Ok(Some(5))),
        (
            "30 03 02 01 01",
            4,
            Err(FrameError::TooLarge { len: 5, max: 4 }),
        ),
        // Too large is known from the header alone, before the contents arrive.
        (
            "30 84 7f ff ff ff",
            1 << 20,
            Err(FrameError::TooLarge {
                len: 0x7fff_ffff + 6,
                max: 1 << 20,
            }),
        ),
        (
            "30 82 ff ff",
            1000,
            Err(FrameError::TooLarge {
                len: 65539,
                max: 1000,
            }),
        ),
        (
            "30 80",
            100,
            Err(FrameError::Malformed("indefinite length")),
        ),
        (
            "30 85 00 00 00 00 03",
            100,
            Err(FrameError::Malformed("length of more than 4 octets")),
        ),
        (
            "31 03 02 01 01",
            100,
            Err(FrameError::Malformed("tag is not SEQUENCE")),
        ),
        ("00", 100, Err(FrameError::Malformed("tag is not SEQUENCE"))),
    ];
    for (input, max, expected) in cases {
        assert_eq!(&frame_len(&unhex(input), *max), expected, "{input}");
    }
}

#[test]
fn raw_entry_encoding_matches_the_generic_encoder() {
    let mut g = Gen::new(2849);
    for i in 0..200 {
        let attributes: Vec<PartialAttribute> = if i == 0 {
            vec![PartialAttribute {
                name: "jpegPhoto".into(),
                values: vec![vec![7; 70_000]],
            }]
        } else {
            random_attributes(&mut g)
        };
        let dn = g.bytes();
        let message_id = [0, 1, 127, 128, 255, 65536, i32::MAX][i % 7];
        let mut attrs = Vec::new();
        for attribute in &attributes {
            let values: Vec<&[u8]> = attribute.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attribute.name, &values);
        }
        let mut raw = vec![0xaa];
        encode_search_result_entry_raw(&mut raw, message_id, &dn, &attrs);
        let mut generic = vec![0xaa];
        msg(
            message_id,
            ProtocolOp::SearchResultEntry(SearchResultEntry { dn, attributes }),
        )
        .encode(&mut generic);
        assert_eq!(raw, generic);
    }
    let mut out = Vec::new();
    encode_partial_attribute(&mut out, "cn", &[b"a", b""]);
    assert_eq!(hex(&out), "30 0b 04 02 63 6e 31 05 04 01 61 04 00");
}

#[test]
fn attached_controls_match_the_generic_encoder() {
    let mut g = Gen::new(4417);
    for i in 0..100 {
        let attributes = random_attributes(&mut g);
        let dn = g.bytes();
        let message_id = [0, 1, 127, 128, 255, 65536, i32::MAX][i % 7];
        let controls = vec![Control {
            oid: "1.3.6.1.4.1.42.2.27.9.5.8".into(),
            critical: i % 2 == 0,
            value: (i % 3 != 0).then(|| vec![0x80, 0x01, 0xff]),
        }];
        let mut attrs = Vec::new();
        for attribute in &attributes {
            let values: Vec<&[u8]> = attribute.values.iter().map(Vec::as_slice).collect();
            encode_partial_attribute(&mut attrs, &attribute.name, &values);
        }
        let mut raw = vec![0xaa];
        encode_search_result_entry_raw(&mut raw, message_id, &dn, &attrs);
        attach_controls(&mut raw, 1, &controls);
        let mut generic = vec![0xaa];
        LdapMessage {
            message_id,
            op: ProtocolOp::SearchResultEntry(SearchResultEntry { dn, attributes }),
            controls,
        }
        .encode(&mut generic);
        assert_eq!(raw, generic);
    }
    // Nothing to attach, or not a message ending the buffer: left as it is.
    let mut out = vec![0x30, 0x00];
    attach_controls(&mut out, 0, &[]);
    assert_eq!(out, [0x30, 0x00]);
    let control = Control {
        oid: "1.2.3".into(),
        critical: false,
        value: None,
    };
    let mut out = vec![0x30, 0x05, 0x00];
    attach_controls(&mut out, 0, std::slice::from_ref(&control));
    assert_eq!(out, [0x30, 0x05, 0x00]);
}

#[test]
fn raw_search_done_matches_the_generic_encoder() {
    let mut g = Gen::new(7741);
    for i in 0..300 {
        let mut result = random_result(&mut g);
        result.referral.clear();
        if i == 0 {
            result.message = "m".repeat(70_000);
        }
        let message_id = [0, 1, 127, 128, 255, 65536, i32::MAX][i % 7];
        let mut raw = vec![0xaa];
        encode_search_result_done_raw(
            &mut raw,
            message_id,
            result.code.code(),
            &result.matched_dn,
            result.message.as_bytes(),
        );
        let mut generic = vec![0xaa];
        msg(message_id, ProtocolOp::SearchResultDone(result)).encode(&mut generic);
        assert_eq!(raw, generic);
    }
    let mut out = Vec::new();
    encode_search_result_done_raw(&mut out, 5, 0, b"", b"");
    assert_eq!(hex(&out), "30 0c 02 01 05 65 07 0a 01 00 04 00 04 00");
}
