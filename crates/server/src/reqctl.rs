//! Request controls: which ones an operation carries, checked once before the operation runs.

use canopy_core::LdapError;
use canopy_proto::oid::{
    CONTROL_ACCOUNT_USABILITY, CONTROL_ASSERTION, CONTROL_DONT_USE_COPY, CONTROL_MANAGE_DSA_IT,
    CONTROL_PAGED_RESULTS, CONTROL_PASSWORD_POLICY, CONTROL_POST_READ, CONTROL_PRE_READ,
    CONTROL_PROXY_AUTHZ, CONTROL_RELAX, CONTROL_TXN_SPEC, CONTROL_VALUES_RETURN,
};
use canopy_proto::oid::{
    CONTROL_DEREF, CONTROL_NO_OP, CONTROL_PERMISSIVE_MODIFY, CONTROL_SUBENTRIES,
};
use canopy_proto::{
    decode_assertion, decode_values_return, Control, DecodeLimits, Filter, PagedResults,
    ReadEntryRequest, RequestKind, ResultCode,
};

use canopy_proto::sort::{CONTROL_SORT_REQUEST, CONTROL_VLV_REQUEST};
use canopy_proto::sync::{SyncRequest, CONTROL_SYNC_REQUEST};

use crate::databases::{ControlSlot, WriteControls};

/// The controls Canopy acts on, decoded.
#[derive(Debug, Clone, Default)]
pub struct RequestControls {
    pub paged: Option<PagedResults>,
    /// RFC 3296: referral objects are ordinary entries.
    pub manage_dsa_it: bool,
    /// RFC 4528: the operation applies only if the target entry matches.
    /// Boxed: rare, and the controls travel with every operation.
    pub assertion: Option<Box<Filter>>,
    /// RFC 4527: attribute selections of the entry before and after an update.
    pub pre_read: Option<Vec<String>>,
    pub post_read: Option<Vec<String>>,
    /// draft-behera-ldap-password-policy-10: the client asks for the password policy response control.
    pub password_policy: bool,
    /// Where the operation leaves that response control.
    pub policy_sink: ControlSlot,
    /// RFC 4533: a sync search (ops/sync.rs).
    pub sync: Option<SyncRequest>,
    /// RFC 3876: only the attribute values one of these simple filter items matches are returned.
    pub values_return: Option<Box<[Filter]>>,
    /// The Relax Rules control: the bookkeeping attributes may be written and the structural class
    /// changed, by a requester with manage access.
    pub relax: bool,
    /// RFC 6171: a search or compare must not be answered from a syncrepl consumer's copy.
    pub dont_use_copy: bool,
    /// Request controls that a database's frontend hook answers on each search result entry (the
    /// password policy's Account Usability), by OID.
    pub entry_controls: Box<[&'static str]>,
    /// RFC 2891 sort and VLV request controls, as sent: decoded by the database that sorts
    /// (`ops/search/sort.rs`), as slapd's overlay decodes them.
    pub sort: Option<Box<crate::sorting::SortControls>>,
    /// RFC 4370: the authorization identity to run the operation as (`sasl::proxy::assume`).
    pub proxy_authz: Option<crate::sasl::proxy::ProxyAuthz>,
    /// RFC 5805: the write belongs to the connection's transaction (txn.rs).
    pub txn: bool,
    /// OpenLDAP's No-Op control, with its criticality: a write runs every check and answers
    /// noOperation.
    pub no_op: Option<bool>,
    /// The Permissive Modify control.
    pub permissive: bool,
    /// RFC 3672 §3: the Subentries control's visibility (None: slapd's default, subentries only
    /// at the base of a base-scope search).
    pub subentries: Option<bool>,
    /// Request controls with a value that a database's frontend hook answers on each search result
    /// entry by reading other entries (the deref overlay's), checked by that hook when the search
    /// starts (`FrontHook::entry_answer`).
    pub entry_requests: Vec<Control>,
}

impl RequestControls {
    /// What a write acts on inside its transaction.
    pub fn write(&self) -> WriteControls {
        WriteControls {
            manage_dsa_it: self.manage_dsa_it,
            assertion: self.assertion.as_deref().cloned(),
            pre_read: self.pre_read.clone(),
            post_read: self.post_read.clone(),
            relax: self.relax,
            permissive: self.permissive,
            no_op: self.no_op,
        }
    }
}

/// The operations a control applies to; elsewhere it is an unknown control (an error only when critical).
fn applies(oid: &str, kind: RequestKind) -> bool {
    use RequestKind::*;
    match oid {
        CONTROL_PAGED_RESULTS => kind == Search,
        CONTROL_MANAGE_DSA_IT => true,
        CONTROL_ASSERTION => matches!(kind, Search | Compare | Add | Delete | Modify | ModifyDn),
        // A pre-read of an added entry or a post-read of a deleted one has nothing to read.
        CONTROL_PRE_READ => matches!(kind, Delete | Modify | ModifyDn),
        CONTROL_POST_READ => matches!(kind, Add | Modify | ModifyDn),
        // Any operation may be refused with changeAfterReset.
        CONTROL_PASSWORD_POLICY => true,
        // slapd's syncprov registers it for searches only.
        CONTROL_SYNC_REQUEST => kind == Search,
        CONTROL_VALUES_RETURN => kind == Search,
        CONTROL_RELAX => matches!(kind, Add | Delete | Modify | ModifyDn),
        // RFC 6171 §3: "applicable to the search and compare operations".
        CONTROL_DONT_USE_COPY => matches!(kind, Search | Compare),
        CONTROL_ACCOUNT_USABILITY => kind == Search,
        CONTROL_SORT_REQUEST | CONTROL_VLV_REQUEST => kind == Search,
        // slapd: every operation but bind (and unbind and abandon, which carry none here); which
        // extended operations is decided with the operation's name (`sasl::proxy::assume`).
        CONTROL_PROXY_AUTHZ => kind != Bind,
        CONTROL_TXN_SPEC => matches!(kind, Add | Delete | Modify | ModifyDn),
        // slapd takes it on searches and compares too, which it answers as without it.
        CONTROL_NO_OP => matches!(kind, Search | Compare | Add | Delete | Modify | ModifyDn),
        CONTROL_PERMISSIVE_MODIFY => kind == Modify,
        CONTROL_SUBENTRIES => kind == Search,
        CONTROL_DEREF => kind == Search,
        _ => false,
    }
}

const ALL_KINDS: [RequestKind; 8] = [
    RequestKind::Bind,
    RequestKind::Search,
    RequestKind::Modify,
    RequestKind::Add,
    RequestKind::Delete,
    RequestKind::ModifyDn,
    RequestKind::Compare,
    RequestKind::Extended,
];

fn protocol_error(text: &str) -> LdapError {
    LdapError::new(ResultCode::ProtocolError, text)
}

/// RFC 5805's Transaction Specification control: critical, with the identifier Start Transaction
/// gave (always empty), as slapd checks it.
fn txn_spec(control: &Control) -> Result<(), LdapError> {
    if !control.critical {
        return Err(protocol_error("txnSpec control must be marked critical"));
    }
    match control.value.as_deref() {
        None => Err(protocol_error("no transaction identifier provided")),
        Some([]) => Ok(()),
        Some(_) => Err(LdapError::new(
            canopy_proto::txn::TXN_ID_INVALID,
            "invalid transaction identifier",
        )),
    }
}

/// The Sync Request control's value, refused with slapd's syncprov texts (`syncprov_parseCtrl`).
fn sync_request(value: Option<&[u8]>) -> Result<SyncRequest, LdapError> {
    let value = value.ok_or_else(|| protocol_error("Sync control value is absent"))?;
    if value.is_empty() {
        return Err(protocol_error("Sync control value is empty"));
    }
    SyncRequest::decode(value).map_err(|e| {
        if e.reason.contains("unknown") {
            protocol_error("Sync control : unknown update mode")
        } else {
            protocol_error("Sync control : mode decoding error")
        }
    })
}

impl RequestControls {
    /// Decodes the controls of a request of `kind`: unknown critical controls fail the operation
    /// (RFC 4511 §4.1.11), as does a control given twice or with a malformed value (protocolError, as slapd).
    pub fn parse(
        controls: &[Control],
        kind: RequestKind,
        limits: &DecodeLimits,
    ) -> Result<RequestControls, LdapError> {
        let mut out = RequestControls::default();
        let mut seen: Vec<&str> = Vec::new();
        for control in controls {
            let oid = control.oid.as_str();
            if !applies(oid, kind) {
                if control.critical {
                    // slapd's two texts: a control it knows, not on this operation, and one it
                    // does not know at all.
                    let known = ALL_KINDS.iter().any(|k| applies(oid, *k));
                    return Err(LdapError::new(
                        ResultCode::UnavailableCriticalExtension,
                        match known {
                            true => "critical extension is unavailable",
                            false => "critical extension is not recognized",
                        },
                    ));
                }
                continue;
            }
            if seen.contains(&oid) {
                if oid == CONTROL_SYNC_REQUEST {
                    return Err(protocol_error("Sync control specified multiple times"));
                }
                if oid == CONTROL_PROXY_AUTHZ {
                    return Err(protocol_error(
                        "proxy authorization control specified multiple times",
                    ));
                }
                if let Some(text) = crate::ctlvalue::duplicate_text(oid) {
                    return Err(protocol_error(text));
                }
                return Err(protocol_error("control specified multiple times"));
            }
            seen.push(oid);
            let value = control.value.as_deref();
            match oid {
                CONTROL_PAGED_RESULTS => {
                    out.paged =
                        Some(PagedResults::decode(value.unwrap_or(&[])).map_err(|_| {
                            protocol_error("paged results control value is malformed")
                        })?);
                }
                CONTROL_MANAGE_DSA_IT => out.manage_dsa_it = true,
                // slapd (parseDontUseCopy) takes a non-critical one too, unless configured to refuse it.
                CONTROL_DONT_USE_COPY => {
                    if value.is_some() {
                        return Err(protocol_error("dontUseCopy control value not absent"));
                    }
                    out.dont_use_copy = true;
                }
                CONTROL_ACCOUNT_USABILITY => {
                    if value.is_some() {
                        return Err(protocol_error("account usability control value not absent"));
                    }
                    // The only per-entry control a hook answers today (given once: duplicates
                    // were refused above).
                    out.entry_controls = Box::new([CONTROL_ACCOUNT_USABILITY]);
                }
                CONTROL_SYNC_REQUEST => out.sync = Some(sync_request(value)?),
                CONTROL_SORT_REQUEST | CONTROL_VLV_REQUEST => {
                    let sort = out.sort.get_or_insert_with(Default::default);
                    let sent = Some((control.critical, value.map(<[u8]>::to_vec)));
                    match oid {
                        CONTROL_SORT_REQUEST => sort.sort = sent,
                        _ => sort.vlv = sent,
                    }
                }
                // slapd takes a non-critical one too (its `disallow proxy_authz_non_critical`
                // is off by default).
                CONTROL_PROXY_AUTHZ => {
                    let value = value.ok_or_else(|| {
                        protocol_error("proxy authorization control value absent")
                    })?;
                    out.proxy_authz = Some(crate::sasl::proxy::ProxyAuthz {
                        authzid: value.to_vec(),
                        critical: control.critical,
                    });
                }
                CONTROL_PASSWORD_POLICY => {
                    out.password_policy = true;
                    out.policy_sink = ControlSlot::new();
                }
                CONTROL_ASSERTION => {
                    let value =
                        value.ok_or_else(|| protocol_error("assertion control value is absent"))?;
                    out.assertion =
                        Some(Box::new(decode_assertion(value, limits).map_err(|_| {
                            protocol_error("assertion control value is malformed")
                        })?));
                }
                CONTROL_RELAX => {
                    if value.is_some() {
                        return Err(protocol_error("relax control value not absent"));
                    }
                    out.relax = true;
                }
                CONTROL_NO_OP => {
                    if value.is_some() {
                        return Err(protocol_error("noop control value not empty"));
                    }
                    out.no_op = Some(control.critical);
                }
                CONTROL_PERMISSIVE_MODIFY => {
                    if value.is_some() {
                        return Err(protocol_error("permissiveModify control value not absent"));
                    }
                    out.permissive = true;
                }
                CONTROL_SUBENTRIES => out.subentries = Some(crate::ctlvalue::subentries(value)?),
                CONTROL_DEREF => {
                    crate::ctlvalue::deref(value)?;
                    out.entry_requests.push(control.clone());
                }
                CONTROL_VALUES_RETURN => {
                    let value = value.ok_or_else(|| {
                        protocol_error("valuesReturnFilter control value is absent")
                    })?;
                    out.values_return = Some(
                        decode_values_return(value, limits)
                            .map_err(|_| {
                                protocol_error("valuesReturnFilter control value is invalid")
                            })?
                            .into_boxed_slice(),
                    );
                }
                CONTROL_PRE_READ | CONTROL_POST_READ => {
                    let value = value
                        .ok_or_else(|| protocol_error("read-entry control value is absent"))?;
                    let request = ReadEntryRequest::decode(value)
                        .map_err(|_| protocol_error("read-entry control value is malformed"))?;
                    if oid == CONTROL_PRE_READ {
                        out.pre_read = Some(request.attributes);
                    } else {
                        out.post_read = Some(request.attributes);
                    }
                }
                CONTROL_TXN_SPEC => {
                    txn_spec(control)?;
                    out.txn = true;
                }
                _ => {}
            }
        }
        // A queued write (txn.rs) is answered before it runs: it cannot read its entry.
        if out.txn {
            let refuse = |which: &str| {
                LdapError::new(
                    ResultCode::UnwillingToPerform,
                    format!("{which} control: cannot perform in transaction"),
                )
            };
            if out.pre_read.is_some() {
                return Err(refuse("preread"));
            }
            if out.post_read.is_some() {
                return Err(refuse("postread"));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_proto::encode_assertion;

    fn control(oid: &str, critical: bool, value: Option<&[u8]>) -> Control {
        Control {
            oid: oid.to_string(),
            critical,
            value: value.map(|v| v.to_vec()),
        }
    }

    fn code(controls: &[Control], kind: RequestKind) -> Option<ResultCode> {
        RequestControls::parse(controls, kind, &DecodeLimits::default())
            .err()
            .map(|e| e.code)
    }

    #[test]
    fn acceptance_table() {
        let filter = encode_assertion(&Filter::parse("(cn=a)").unwrap());
        let read = ReadEntryRequest {
            attributes: vec!["cn".into()],
        }
        .encode();
        use RequestKind::*;
        let unavailable = Some(ResultCode::UnavailableCriticalExtension);
        let protocol = Some(ResultCode::ProtocolError);
        let cases: Vec<(Vec<Control>, RequestKind, Option<ResultCode>)> = vec![
            (
                vec![control(CONTROL_ASSERTION, true, Some(&filter))],
                Modify,
                None,
            ),
            (
                vec![control(CONTROL_ASSERTION, true, Some(&filter))],
                Bind,
                unavailable,
            ),
            (
                vec![control(CONTROL_ASSERTION, false, Some(&filter))],
                Bind,
                None,
            ),
            (
                vec![control(CONTROL_ASSERTION, true, Some(b"\x04\x00"))],
                Search,
                protocol,
            ),
            (
                vec![control(CONTROL_ASSERTION, false, None)],
                Search,
                protocol,
            ),
            (
                vec![control(CONTROL_PRE_READ, true, Some(&read))],
                Add,
                unavailable,
            ),
            (
                vec![control(CONTROL_PRE_READ, false, Some(&read))],
                Add,
                None,
            ),
            (
                vec![control(CONTROL_POST_READ, true, Some(&read))],
                Delete,
                unavailable,
            ),
            (
                vec![control(CONTROL_POST_READ, true, Some(&read))],
                Add,
                None,
            ),
            (
                vec![control(CONTROL_PRE_READ, true, Some(b"\x04\x00"))],
                Delete,
                protocol,
            ),
            (
                vec![control(CONTROL_PRE_READ, true, Some(&read))],
                Search,
                unavailable,
            ),
            (
                vec![
                    control(CONTROL_MANAGE_DSA_IT, true, None),
                    control(CONTROL_MANAGE_DSA_IT, true, None),
                ],
                Search,
                protocol,
            ),
            (
                vec![control(CONTROL_MANAGE_DSA_IT, true, None)],
                Delete,
                None,
            ),
            (
                vec![control(CONTROL_DONT_USE_COPY, true, None)],
                Compare,
                None,
            ),
            (
                vec![control(CONTROL_DONT_USE_COPY, false, None)],
                Search,
                None,
            ),
            (
                vec![control(CONTROL_DONT_USE_COPY, true, Some(b""))],
                Search,
                protocol,
            ),
            (
                vec![control(CONTROL_DONT_USE_COPY, true, None)],
                Modify,
                unavailable,
            ),
            (
                vec![control(CONTROL_ACCOUNT_USABILITY, true, None)],
                Search,
                None,
            ),
            (
                vec![control(CONTROL_ACCOUNT_USABILITY, true, Some(b""))],
                Search,
                protocol,
            ),
            (
                vec![control(CONTROL_ACCOUNT_USABILITY, true, None)],
                Compare,
                unavailable,
            ),
            (
                vec![control(CONTROL_PROXY_AUTHZ, true, Some(b"dn:cn=x"))],
                Modify,
                None,
            ),
            (
                vec![control(CONTROL_PROXY_AUTHZ, true, Some(b"dn:cn=x"))],
                Bind,
                unavailable,
            ),
            (
                vec![control(CONTROL_PROXY_AUTHZ, false, Some(b""))],
                Bind,
                None,
            ),
            (
                vec![control(CONTROL_PROXY_AUTHZ, true, None)],
                Search,
                protocol,
            ),
            (
                vec![
                    control(CONTROL_PROXY_AUTHZ, false, Some(b"")),
                    control(CONTROL_PROXY_AUTHZ, false, Some(b"")),
                ],
                Compare,
                protocol,
            ),
            (
                vec![control("2.16.840.1.113730.3.4.12", true, Some(b""))],
                Search,
                unavailable,
            ),
            (vec![control("1.2.3.4", true, None)], Search, unavailable),
            (vec![control("1.2.3.4", false, None)], Search, None),
            (
                vec![control(
                    CONTROL_PAGED_RESULTS,
                    true,
                    Some(b"\x30\x05\x02\x01\x05\x04\x00"),
                )],
                Search,
                None,
            ),
            (
                vec![control(
                    CONTROL_PAGED_RESULTS,
                    true,
                    Some(b"\x30\x05\x02\x01\x05\x04\x00"),
                )],
                Modify,
                unavailable,
            ),
        ];
        for (controls, kind, expected) in cases {
            assert_eq!(code(&controls, kind), expected, "{controls:?} on {kind:?}");
        }
    }

    #[test]
    fn sync_request_control() {
        use RequestKind::*;
        let ro = canopy_proto::sync::SyncRequest {
            mode: canopy_proto::sync::SyncMode::RefreshOnly,
            cookie: Some(b"rid=001".to_vec()),
            reload_hint: false,
        }
        .encode();
        let sync = |value: Option<&[u8]>| control(CONTROL_SYNC_REQUEST, true, value);
        let parsed =
            RequestControls::parse(&[sync(Some(&ro))], Search, &DecodeLimits::default()).unwrap();
        assert_eq!(
            parsed.sync.unwrap().cookie.as_deref(),
            Some(&b"rid=001"[..])
        );
        let protocol = Some(ResultCode::ProtocolError);
        for (controls, kind, expected) in [
            (vec![sync(None)], Search, protocol),
            (vec![sync(Some(b""))], Search, protocol),
            (vec![sync(Some(b"\x30\x03\x0a\x01\x02"))], Search, protocol),
            (vec![sync(Some(b"\x04\x01"))], Search, protocol),
            (vec![sync(Some(&ro)), sync(Some(&ro))], Search, protocol),
            (
                vec![sync(Some(&ro))],
                Modify,
                Some(ResultCode::UnavailableCriticalExtension),
            ),
            (
                vec![control(CONTROL_SYNC_REQUEST, false, Some(&ro))],
                Modify,
                None,
            ),
        ] {
            assert_eq!(code(&controls, kind), expected, "{controls:?} on {kind:?}");
        }
    }

    #[test]
    fn smaller_controls() {
        use RequestKind::*;
        let protocol = Some(ResultCode::ProtocolError);
        let unavailable = Some(ResultCode::UnavailableCriticalExtension);
        let text = |controls: &[Control], kind| {
            RequestControls::parse(controls, kind, &DecodeLimits::default())
                .err()
                .map(|e| e.message)
        };
        let noop = control(CONTROL_NO_OP, true, None);
        let permissive = control(CONTROL_PERMISSIVE_MODIFY, true, None);
        let subentries = control(CONTROL_SUBENTRIES, true, Some(b"\x01\x01\xff"));
        let deref = control(CONTROL_DEREF, true, Some(b"\x30\x00"));
        for (controls, kind, expected) in [
            (vec![noop.clone()], Modify, None),
            (vec![noop.clone()], Search, None),
            (vec![noop.clone()], Bind, unavailable),
            (vec![noop.clone()], Extended, unavailable),
            (
                vec![control(CONTROL_NO_OP, true, Some(b""))],
                Modify,
                protocol,
            ),
            (vec![noop.clone(), noop.clone()], Add, protocol),
            (vec![permissive.clone()], Modify, None),
            (vec![permissive.clone()], Add, unavailable),
            (
                vec![permissive.clone(), permissive.clone()],
                Modify,
                protocol,
            ),
            (vec![subentries.clone()], Search, None),
            (vec![subentries.clone()], Compare, unavailable),
            (
                vec![control(CONTROL_SUBENTRIES, true, None)],
                Search,
                protocol,
            ),
            (vec![deref.clone()], Search, None),
            (vec![deref.clone()], Compare, unavailable),
            (
                vec![control(CONTROL_DEREF, true, Some(b""))],
                Search,
                protocol,
            ),
        ] {
            assert_eq!(code(&controls, kind), expected, "{controls:?} on {kind:?}");
        }
        assert_eq!(
            text(&[noop.clone(), noop], Modify).as_deref(),
            Some("noop control specified multiple times")
        );
        assert_eq!(
            text(&[deref.clone(), deref], Search).as_deref(),
            Some("Dereference control specified multiple times")
        );
        let parsed = RequestControls::parse(
            &[permissive, control(CONTROL_NO_OP, false, None)],
            Modify,
            &DecodeLimits::default(),
        )
        .unwrap();
        let write = parsed.write();
        assert!(write.permissive && write.no_op == Some(false));
        let parsed =
            RequestControls::parse(&[subentries], Search, &DecodeLimits::default()).unwrap();
        assert_eq!(parsed.subentries, Some(true));
    }

    #[test]
    fn decoded_values() {
        let filter = Filter::parse("(uid=x)").unwrap();
        let read = ReadEntryRequest {
            attributes: vec!["cn".into(), "+".into()],
        };
        let controls = [
            control(CONTROL_ASSERTION, true, Some(&encode_assertion(&filter))),
            control(CONTROL_PRE_READ, false, Some(&read.encode())),
            control(
                CONTROL_POST_READ,
                false,
                Some(&ReadEntryRequest::default().encode()),
            ),
            control(CONTROL_MANAGE_DSA_IT, false, None),
        ];
        let parsed =
            RequestControls::parse(&controls, RequestKind::Modify, &DecodeLimits::default())
                .unwrap();
        assert_eq!(parsed.assertion.as_deref(), Some(&filter));
        assert_eq!(parsed.pre_read, Some(read.attributes));
        assert_eq!(parsed.post_read, Some(Vec::new()));
        assert!(parsed.manage_dsa_it);
        assert!(parsed.paged.is_none());
    }
}
