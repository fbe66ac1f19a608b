//! Why a structured message was refused: a bad shape when parsing, or a broken
//! invariant when validating.
//!
//! Every error names the message kind and the wire field (`requestId`, not
//! `request_id`; nested fields as `response.updated_input`) so a person reading a
//! log can find the offending key in the inbox file.

use super::MessageKind;

/// A structured message that has a known `type` but cannot be used as that type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A required field is absent.
    #[error("{kind} message is missing required field `{field}`")]
    MissingField {
        /// The message kind.
        kind: MessageKind,
        /// The wire name of the field.
        field: String,
    },

    /// A field is present with the wrong JSON type.
    #[error("{kind} message field `{field}` must be {expected}, found {found}")]
    WrongType {
        /// The message kind.
        kind: MessageKind,
        /// The wire name of the field.
        field: String,
        /// What the field must be (`"a string"`, `"a boolean"`, …).
        expected: &'static str,
        /// What it was (`"a number"`, `"null"`, …).
        found: &'static str,
    },

    /// A field has the right JSON type but a value the protocol does not allow.
    #[error("{kind} message field `{field}` {problem}")]
    InvalidValue {
        /// The message kind.
        kind: MessageKind,
        /// The wire name of the field.
        field: String,
        /// What is wrong with it, as a phrase completing "field `x` …".
        problem: String,
    },
}

impl ProtocolError {
    /// The kind of message the error is about.
    pub fn kind(&self) -> MessageKind {
        match self {
            ProtocolError::MissingField { kind, .. }
            | ProtocolError::WrongType { kind, .. }
            | ProtocolError::InvalidValue { kind, .. } => *kind,
        }
    }

    /// The wire name of the offending field.
    pub fn field(&self) -> &str {
        match self {
            ProtocolError::MissingField { field, .. }
            | ProtocolError::WrongType { field, .. }
            | ProtocolError::InvalidValue { field, .. } => field,
        }
    }
}
