//! What a well-formed model request is, checked before it is metered or
//! sent: its size as JSON ([`MAX_REQUEST_BYTES`]), its roles, its tools and
//! its tool results.

use crate::model::types::{ContentBlock, ModelError, Request, Role, ToolChoice};

/// The largest request a guest may send, as JSON (8 MiB).
pub const MAX_REQUEST_BYTES: usize = 8 << 20;

/// `s` cut to `n` characters, marked when cut.
pub(super) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() > n {
        format!("{}…", s.chars().take(n).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Checks a request's shape; returns its size as JSON.
pub(super) fn validate(request: &Request) -> Result<usize, ModelError> {
    let invalid = |s: String| Err(ModelError::Invalid(s));
    let size = serde_json::to_vec(request)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_REQUEST_BYTES {
        return invalid(format!(
            "the request is {size} bytes of JSON; the most is {MAX_REQUEST_BYTES}: drop or shorten older messages"
        ));
    }
    let Some(first) = request.messages.first() else {
        return invalid("a request needs at least one message".into());
    };
    if first.role != Role::User {
        return invalid("the first message must be the user's".into());
    }
    if let Some(t) = request.temperature {
        if !(0.0..=1.0).contains(&t) {
            return invalid(format!("temperature {t} is outside 0..=1"));
        }
    }
    let mut names = std::collections::HashSet::new();
    for tool in &request.tools {
        let ok_name = !tool.name.is_empty()
            && tool.name.len() <= 64
            && tool
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok_name {
            return invalid(format!(
                "tool name {:?} must be 1 to 64 characters of letters, digits, '_' or '-'",
                truncate(&tool.name, 64)
            ));
        }
        if !names.insert(tool.name.as_str()) {
            return invalid(format!("tool {:?} is defined twice", tool.name));
        }
        match serde_json::from_str::<serde_json::Value>(&tool.input_schema) {
            Ok(serde_json::Value::Object(_)) => {}
            _ => {
                return invalid(format!(
                    "the input schema of tool {:?} is not a JSON object",
                    tool.name
                ))
            }
        }
    }
    if let Some(ToolChoice::Tool(name)) = &request.tool_choice {
        if !names.contains(name.as_str()) {
            return invalid(format!(
                "tool-choice names {:?}, which is not among the request's tools",
                truncate(name, 64)
            ));
        }
    }
    // Every tool result answers a tool use of the assistant message just
    // before it.
    let mut asked: Vec<&str> = Vec::new();
    for (i, message) in request.messages.iter().enumerate() {
        let mut uses = Vec::new();
        for block in &message.content {
            match block {
                ContentBlock::ToolUse(u) if message.role == Role::Assistant => {
                    uses.push(u.id.as_str())
                }
                ContentBlock::ToolUse(_) => {
                    return invalid(format!("message {i}: only the assistant writes tool uses"))
                }
                ContentBlock::ToolResult(r)
                    if message.role == Role::User && !asked.contains(&r.tool_use_id.as_str()) =>
                {
                    return invalid(format!(
                        "message {i} answers tool use {:?}, which the assistant message before it did not make",
                        truncate(&r.tool_use_id, 64)
                    ));
                }
                ContentBlock::ToolResult(_) if message.role == Role::User => {}
                ContentBlock::ToolResult(_) => {
                    return invalid(format!("message {i}: tool results belong in user messages"))
                }
                _ => {}
            }
        }
        asked = uses;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Message, ToolResult, ToolUse};

    fn msg(role: Role, content: Vec<ContentBlock>) -> Message {
        Message { role, content }
    }

    #[test]
    fn an_orphan_tool_result_is_invalid() {
        let use_ = ContentBlock::ToolUse(ToolUse {
            id: "a".into(),
            name: "Read".into(),
            input: "{}".into(),
        });
        let result = |id: &str| {
            ContentBlock::ToolResult(ToolResult {
                tool_use_id: id.into(),
                content: String::new(),
                is_error: false,
            })
        };
        let good = Request::new(vec![
            msg(Role::User, vec![ContentBlock::Text("x".into())]),
            msg(Role::Assistant, vec![use_.clone()]),
            msg(Role::User, vec![result("a")]),
        ]);
        assert!(validate(&good).is_ok());
        let orphan = Request::new(vec![msg(Role::User, vec![result("zzz")])]);
        assert!(
            matches!(validate(&orphan), Err(ModelError::Invalid(m)) if m.contains("did not make"))
        );
        assert!(validate(&Request::new(vec![])).is_err());
        assert!(validate(&Request::new(vec![msg(Role::Assistant, vec![use_])])).is_err());
    }
}
