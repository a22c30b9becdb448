//! LDAP result codes (RFC 4511 §4.1.9 and Appendix A).

/// RFC 4511 §4.1.9 resultCode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultCode {
    Success,
    OperationsError,
    ProtocolError,
    TimeLimitExceeded,
    SizeLimitExceeded,
    CompareFalse,
    CompareTrue,
    AuthMethodNotSupported,
    StrongerAuthRequired,
    Referral,
    AdminLimitExceeded,
    UnavailableCriticalExtension,
    ConfidentialityRequired,
    SaslBindInProgress,
    NoSuchAttribute,
    UndefinedAttributeType,
    InappropriateMatching,
    ConstraintViolation,
    AttributeOrValueExists,
    InvalidAttributeSyntax,
    NoSuchObject,
    AliasProblem,
    InvalidDnSyntax,
    AliasDereferencingProblem,
    InappropriateAuthentication,
    InvalidCredentials,
    InsufficientAccessRights,
    Busy,
    Unavailable,
    UnwillingToPerform,
    LoopDetect,
    NamingViolation,
    ObjectClassViolation,
    NotAllowedOnNonLeaf,
    NotAllowedOnRdn,
    EntryAlreadyExists,
    ObjectClassModsProhibited,
    AffectsMultipleDsas,
    Other,
    /// RFC 3909 cancel result codes and any code we do not name.
    Canceled,
    NoSuchOperation,
    TooLate,
    CannotCancel,
    /// RFC 4528 assertion control failure.
    AssertionFailed,
    /// Any other numeric code received from a peer.
    Unknown(u32),
}

impl ResultCode {
    pub fn code(self) -> u32 {
        use ResultCode::*;
        match self {
            Success => 0,
            OperationsError => 1,
            ProtocolError => 2,
            TimeLimitExceeded => 3,
            SizeLimitExceeded => 4,
            CompareFalse => 5,
            CompareTrue => 6,
            AuthMethodNotSupported => 7,
            StrongerAuthRequired => 8,
            Referral => 10,
            AdminLimitExceeded => 11,
            UnavailableCriticalExtension => 12,
            ConfidentialityRequired => 13,
            SaslBindInProgress => 14,
            NoSuchAttribute => 16,
            UndefinedAttributeType => 17,
            InappropriateMatching => 18,
            ConstraintViolation => 19,
            AttributeOrValueExists => 20,
            InvalidAttributeSyntax => 21,
            NoSuchObject => 32,
            AliasProblem => 33,
            InvalidDnSyntax => 34,
            AliasDereferencingProblem => 36,
            InappropriateAuthentication => 48,
            InvalidCredentials => 49,
            InsufficientAccessRights => 50,
            Busy => 51,
            Unavailable => 52,
            UnwillingToPerform => 53,
            LoopDetect => 54,
            NamingViolation => 64,
            ObjectClassViolation => 65,
            NotAllowedOnNonLeaf => 66,
            NotAllowedOnRdn => 67,
            EntryAlreadyExists => 68,
            ObjectClassModsProhibited => 69,
            AffectsMultipleDsas => 71,
            Other => 80,
            Canceled => 118,
            NoSuchOperation => 119,
            TooLate => 120,
            CannotCancel => 121,
            AssertionFailed => 122,
            Unknown(n) => n,
        }
    }

    pub fn from_code(code: u32) -> ResultCode {
        use ResultCode::*;
        const ALL: [ResultCode; 44] = [
            Success, OperationsError, ProtocolError, TimeLimitExceeded, SizeLimitExceeded,
            CompareFalse, CompareTrue, AuthMethodNotSupported, StrongerAuthRequired, Referral,
            AdminLimitExceeded, UnavailableCriticalExtension, ConfidentialityRequired,
            SaslBindInProgress, NoSuchAttribute, UndefinedAttributeType, InappropriateMatching,
            ConstraintViolation, AttributeOrValueExists, InvalidAttributeSyntax, NoSuchObject,
            AliasProblem, InvalidDnSyntax, AliasDereferencingProblem, InappropriateAuthentication,
            InvalidCredentials, InsufficientAccessRights, Busy, Unavailable, UnwillingToPerform,
            LoopDetect, NamingViolation, ObjectClassViolation, NotAllowedOnNonLeaf, NotAllowedOnRdn,
            EntryAlreadyExists, ObjectClassModsProhibited, AffectsMultipleDsas, Other, Canceled,
            NoSuchOperation, TooLate, CannotCancel, AssertionFailed,
        ];
        ALL.iter().copied().find(|c| c.code() == code).unwrap_or(Unknown(code))
    }
}
