//! Object identifiers of the controls and extended operations Canopy knows.

pub const CONTROL_PAGED_RESULTS: &str = "1.2.840.113556.1.4.319";
pub const CONTROL_MANAGE_DSA_IT: &str = "2.16.840.1.113730.3.4.2";
/// RFC 4528 assertion control.
pub const CONTROL_ASSERTION: &str = "1.3.6.1.1.12";
/// RFC 4527 pre-read and post-read controls.
pub const CONTROL_PRE_READ: &str = "1.3.6.1.1.13.1";
pub const CONTROL_POST_READ: &str = "1.3.6.1.1.13.2";
/// RFC 6171 Don't Use Copy: the client wants the entries of an original, not of a copy (a shadow).
pub const CONTROL_DONT_USE_COPY: &str = "1.3.6.1.1.22";
/// RFC 4533 syncrepl: see [`crate::sync`] for its controls.
pub const EXOP_WHO_AM_I: &str = "1.3.6.1.4.1.4203.1.11.3";
pub const EXOP_PASSWORD_MODIFY: &str = "1.3.6.1.4.1.4203.1.11.1";
pub const EXOP_START_TLS: &str = "1.3.6.1.4.1.1466.20037";
/// RFC 5805 transactions: Start and End Transaction, and the Transaction Specification control.
pub const EXOP_TXN_START: &str = "1.3.6.1.1.21.1";
pub const EXOP_TXN_END: &str = "1.3.6.1.1.21.3";
pub const CONTROL_TXN_SPEC: &str = "1.3.6.1.1.21.2";
/// RFC 2589 Refresh: a dynamic entry's time to live (the dds overlay).
pub const EXOP_REFRESH: &str = "1.3.6.1.4.1.1466.101.119.1";
/// RFC 4511 §4.4.1 Notice of Disconnection.
pub const NOTICE_OF_DISCONNECTION: &str = "1.3.6.1.4.1.1466.20036";
/// draft-behera-ldap-password-policy-10 §6.1: the password policy request and response control.
pub const CONTROL_PASSWORD_POLICY: &str = "1.3.6.1.4.1.42.2.27.8.5.1";
/// slapd's Relax Rules control (draft-zeilenga-ldap-relax): write the bookkeeping attributes, change
/// an entry's structural class.
pub const CONTROL_RELAX: &str = "1.3.6.1.4.1.4203.666.5.12";
/// RFC 3876: the Matched Values control (a values return filter).
pub const CONTROL_VALUES_RETURN: &str = "1.2.826.0.1.3344810.2.3";
/// Sun's Account Usability control: on a search, each entry's response control says whether its
/// account may bind (slapd's ppolicy overlay answers it).
pub const CONTROL_ACCOUNT_USABILITY: &str = "1.3.6.1.4.1.42.2.27.9.5.8";
/// Netscape's password expired control (value "0"), sent by slapd's `ppolicy_send_netscape_controls`.
pub const CONTROL_NETSCAPE_PASSWORD_EXPIRED: &str = "2.16.840.1.113730.3.4.4";
/// Netscape's password expiring control (value: seconds left, as digits).
pub const CONTROL_NETSCAPE_PASSWORD_EXPIRING: &str = "2.16.840.1.113730.3.4.5";

/// RFC 4370 proxied authorization (the only version slapd 2.5 knows; the older .12 is unrecognized).
pub const CONTROL_PROXY_AUTHZ: &str = "2.16.840.1.113730.3.4.18";
/// OpenLDAP's No-Op control (draft-zeilenga-ldap-noop, the OID slapd and ldap-utils use): a write
/// runs every check and answers noOperation, changing nothing.
pub const CONTROL_NO_OP: &str = "1.3.6.1.4.1.4203.666.5.2";
/// Microsoft's Permissive Modify control: adding a present value or deleting from an absent
/// attribute is not an error.
pub const CONTROL_PERMISSIVE_MODIFY: &str = "1.2.840.113556.1.4.1413";
/// RFC 3672 §3: the Subentries control (a BOOLEAN: whether a search sees subentries or the others).
pub const CONTROL_SUBENTRIES: &str = "1.3.6.1.4.1.4203.1.10.1";
/// RFC 3909: the Cancel extended operation.
pub const EXOP_CANCEL: &str = "1.3.6.1.1.8";
/// slapd's deref overlay control (draft-masarati-ldap-deref): the entries an attribute's DN values
/// name, read on each search result entry.
pub const CONTROL_DEREF: &str = "1.3.6.1.4.1.4203.666.5.16";
