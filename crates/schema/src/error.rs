//! Error types of the schema layer.

/// Errors from loading schema text or normalizing DNs against the schema.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{origin}:{line}: {reason}")]
    Parse {
        origin: String,
        line: usize,
        reason: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("undefined attribute type: {0}")]
    UnknownAttributeType(String),
    #[error("invalid value for {attr}: {reason}")]
    InvalidValue { attr: String, reason: String },
    #[error("{origin}:{line}: duplicate definition of {what}")]
    Duplicate {
        origin: String,
        line: usize,
        what: String,
    },
}

/// A value that the syntax of a matching rule rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct InvalidValue {
    pub reason: String,
}

impl InvalidValue {
    pub(crate) fn new(reason: impl Into<String>) -> InvalidValue {
        InvalidValue {
            reason: reason.into(),
        }
    }
}
