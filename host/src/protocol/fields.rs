//! Reading a message's fields out of a JSON object, and the checks shared by the
//! messages' `validate` methods. Private to the protocol module.
//!
//! [`Fields`] takes each known field out of the object in wire order, so the
//! first error reported is the first bad field, and what is left over (unknown
//! keys written by other programs) is returned in its original order for the
//! message's `extra` map. Removal uses `shift_remove`: with serde_json's
//! `preserve_order`, plain `remove` swaps the last key into the hole and would
//! reorder the leftovers.

use serde_json::{Map, Value};

use super::{MessageKind, ProtocolError};

/// A JSON object being taken apart into a message's fields.
pub(super) struct Fields {
    kind: MessageKind,
    /// Prepended to field names in errors (`"response."` for a nested object).
    prefix: &'static str,
    map: Map<String, Value>,
}

impl Fields {
    /// Starts reading a top-level message. A `type` key, if present, is removed
    /// and must equal `kind`'s wire name.
    pub(super) fn top(
        kind: MessageKind,
        mut map: Map<String, Value>,
    ) -> Result<Self, ProtocolError> {
        if let Some(tag) = map.shift_remove("type") {
            if tag.as_str() != Some(kind.as_str()) {
                return Err(ProtocolError::InvalidValue {
                    kind,
                    field: "type".to_string(),
                    problem: format!("must be {:?}, found {tag}", kind.as_str()),
                });
            }
        }
        Ok(Fields {
            kind,
            prefix: "",
            map,
        })
    }

    /// Starts reading a nested object found at `prefix` (written with its
    /// trailing dot, e.g. `"response."`).
    pub(super) fn nested(
        kind: MessageKind,
        prefix: &'static str,
        value: Value,
    ) -> Result<Self, ProtocolError> {
        match value {
            Value::Object(map) => Ok(Fields { kind, prefix, map }),
            other => Err(ProtocolError::WrongType {
                kind,
                field: prefix.trim_end_matches('.').to_string(),
                expected: "an object",
                found: describe(&other),
            }),
        }
    }

    fn name(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    fn missing(&self, field: &str) -> ProtocolError {
        ProtocolError::MissingField {
            kind: self.kind,
            field: self.name(field),
        }
    }

    fn wrong(&self, field: &str, expected: &'static str, found: &Value) -> ProtocolError {
        ProtocolError::WrongType {
            kind: self.kind,
            field: self.name(field),
            expected,
            found: describe(found),
        }
    }

    /// Takes `field` whatever its JSON type (including `null`); absent is an error.
    pub(super) fn any(&mut self, field: &str) -> Result<Value, ProtocolError> {
        self.map
            .shift_remove(field)
            .ok_or_else(|| self.missing(field))
    }

    /// Takes `field` if present and not `null`.
    pub(super) fn opt_any(&mut self, field: &str) -> Option<Value> {
        match self.map.shift_remove(field) {
            None | Some(Value::Null) => None,
            Some(value) => Some(value),
        }
    }

    /// Takes a required string field.
    pub(super) fn string(&mut self, field: &str) -> Result<String, ProtocolError> {
        match self.any(field)? {
            Value::String(s) => Ok(s),
            other => Err(self.wrong(field, "a string", &other)),
        }
    }

    /// Takes an optional string field; absent or `null` is `None`.
    pub(super) fn opt_string(&mut self, field: &str) -> Result<Option<String>, ProtocolError> {
        match self.opt_any(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(field, "a string", &other)),
        }
    }

    /// Takes a required boolean field.
    pub(super) fn boolean(&mut self, field: &str) -> Result<bool, ProtocolError> {
        match self.any(field)? {
            Value::Bool(b) => Ok(b),
            other => Err(self.wrong(field, "a boolean", &other)),
        }
    }

    /// Takes a required array field.
    pub(super) fn array(&mut self, field: &str) -> Result<Vec<Value>, ProtocolError> {
        match self.any(field)? {
            Value::Array(items) => Ok(items),
            other => Err(self.wrong(field, "an array", &other)),
        }
    }

    /// Takes an optional array field; absent or `null` is `None`.
    pub(super) fn opt_array(&mut self, field: &str) -> Result<Option<Vec<Value>>, ProtocolError> {
        match self.opt_any(field) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => Err(self.wrong(field, "an array", &other)),
        }
    }

    /// What is left: the keys this message does not know, in their original order.
    pub(super) fn rest(self) -> Map<String, Value> {
        self.map
    }
}

/// A short English name for a JSON value's type, for error messages.
pub(super) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Fails unless `value` has at least one non-whitespace character.
pub(super) fn non_empty(kind: MessageKind, field: &str, value: &str) -> Result<(), ProtocolError> {
    if value.trim().is_empty() {
        return Err(invalid(kind, field, "must not be empty".to_string()));
    }
    Ok(())
}

/// Fails unless `value` is an RFC 3339 timestamp (the reference writes
/// `2026-02-13T10:11:35.247Z`; older entries omit the milliseconds).
pub(super) fn timestamp(kind: MessageKind, field: &str, value: &str) -> Result<(), ProtocolError> {
    if super::time::parse_timestamp(value).is_none() {
        return Err(invalid(
            kind,
            field,
            format!(
                "must be an RFC 3339 timestamp like \"2026-02-13T10:11:35.247Z\", found {value:?}"
            ),
        ));
    }
    Ok(())
}

/// Fails unless `value` is one of `allowed`.
pub(super) fn one_of(
    kind: MessageKind,
    field: &str,
    value: &str,
    allowed: &[&str],
) -> Result<(), ProtocolError> {
    if !allowed.contains(&value) {
        return Err(invalid(
            kind,
            field,
            format!("must be one of {}, found {value:?}", allowed.join("|")),
        ));
    }
    Ok(())
}

/// Fails when a field that must be absent in this case is present.
pub(super) fn absent<T>(
    kind: MessageKind,
    field: &str,
    value: &Option<T>,
    when: &str,
) -> Result<(), ProtocolError> {
    if value.is_some() {
        return Err(invalid(kind, field, format!("must be absent {when}")));
    }
    Ok(())
}

/// A [`ProtocolError::InvalidValue`] for `field`.
pub(super) fn invalid(kind: MessageKind, field: &str, problem: String) -> ProtocolError {
    ProtocolError::InvalidValue {
        kind,
        field: field.to_string(),
        problem,
    }
}

/// Turns a failed request-id check into an error on `field`.
pub(super) fn request_id<T>(
    kind: MessageKind,
    field: &str,
    parsed: Result<T, super::ids::IdError>,
) -> Result<(), ProtocolError> {
    match parsed {
        Ok(_) => Ok(()),
        Err(err) => Err(invalid(kind, field, format!("is malformed: {err}"))),
    }
}
