//! Conversions between the generated `teamhost:agent/model` bindings and the
//! host's plain model types ([`crate::model::types`]). Field for field; no
//! policy here.

use crate::model as m;
use crate::runtime::bindings::model as w;

pub(super) fn request_from_wit(r: w::Request) -> m::Request {
    m::Request {
        model: r.model,
        system: r.system,
        messages: r.messages.into_iter().map(message_from_wit).collect(),
        tools: r.tools.into_iter().map(tool_definition_from_wit).collect(),
        tool_choice: r.tool_choice.map(|c| match c {
            w::ToolChoice::Auto => m::ToolChoice::Auto,
            w::ToolChoice::Any => m::ToolChoice::Any,
            w::ToolChoice::None => m::ToolChoice::None,
            w::ToolChoice::Tool(name) => m::ToolChoice::Tool(name),
        }),
        max_tokens: r.max_tokens,
        temperature: r.temperature,
        stop_sequences: r.stop_sequences,
    }
}

pub(crate) fn tool_definition_from_wit(d: w::ToolDefinition) -> m::ToolDefinition {
    m::ToolDefinition {
        name: d.name,
        description: d.description,
        input_schema: d.input_schema,
    }
}

pub(crate) fn tool_definition_to_wit(d: m::ToolDefinition) -> w::ToolDefinition {
    w::ToolDefinition {
        name: d.name,
        description: d.description,
        input_schema: d.input_schema,
    }
}

fn message_from_wit(msg: w::Message) -> m::Message {
    m::Message {
        role: match msg.role {
            w::Role::User => m::Role::User,
            w::Role::Assistant => m::Role::Assistant,
        },
        content: msg.content.into_iter().map(block_from_wit).collect(),
    }
}

fn block_from_wit(b: w::ContentBlock) -> m::ContentBlock {
    match b {
        w::ContentBlock::Text(t) => m::ContentBlock::Text(t),
        w::ContentBlock::ToolUse(u) => m::ContentBlock::ToolUse(m::ToolUse {
            id: u.id,
            name: u.name,
            input: u.input,
        }),
        w::ContentBlock::ToolResult(r) => m::ContentBlock::ToolResult(m::ToolResult {
            tool_use_id: r.tool_use_id,
            content: r.content,
            is_error: r.is_error,
        }),
        w::ContentBlock::Thinking(t) => m::ContentBlock::Thinking(m::Thinking {
            text: t.text,
            signature: t.signature,
        }),
    }
}

pub(super) fn message_to_wit(msg: m::Message) -> w::Message {
    w::Message {
        role: match msg.role {
            m::Role::User => w::Role::User,
            m::Role::Assistant => w::Role::Assistant,
        },
        content: msg.content.into_iter().map(block_to_wit).collect(),
    }
}

fn block_to_wit(b: m::ContentBlock) -> w::ContentBlock {
    match b {
        m::ContentBlock::Text(t) => w::ContentBlock::Text(t),
        m::ContentBlock::ToolUse(u) => w::ContentBlock::ToolUse(w::ToolUse {
            id: u.id,
            name: u.name,
            input: u.input,
        }),
        m::ContentBlock::ToolResult(r) => w::ContentBlock::ToolResult(w::ToolResult {
            tool_use_id: r.tool_use_id,
            content: r.content,
            is_error: r.is_error,
        }),
        m::ContentBlock::Thinking(t) => w::ContentBlock::Thinking(w::Thinking {
            text: t.text,
            signature: t.signature,
        }),
    }
}

pub(super) fn usage_to_wit(u: m::Usage) -> w::Usage {
    w::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
    }
}

pub(super) fn response_to_wit(r: m::Response) -> w::Response {
    w::Response {
        id: r.id,
        model: r.model,
        content: r.content.into_iter().map(block_to_wit).collect(),
        stop_reason: match r.stop_reason {
            m::StopReason::EndTurn => w::StopReason::EndTurn,
            m::StopReason::ToolUse => w::StopReason::ToolUse,
            m::StopReason::MaxTokens => w::StopReason::MaxTokens,
            m::StopReason::StopSequence => w::StopReason::StopSequence,
            m::StopReason::Refusal => w::StopReason::Refusal,
            m::StopReason::Other(o) => w::StopReason::Other(o),
        },
        usage: usage_to_wit(r.usage),
    }
}

pub(super) fn error_to_wit(e: m::ModelError) -> w::ModelError {
    match e {
        m::ModelError::Denied(s) => w::ModelError::Denied(s),
        m::ModelError::BudgetExhausted(s) => w::ModelError::BudgetExhausted(s),
        m::ModelError::RateLimited {
            retry_after_ms,
            message,
        } => w::ModelError::RateLimited(w::RateLimited {
            retry_after_ms,
            message,
        }),
        m::ModelError::Invalid(s) => w::ModelError::Invalid(s),
        m::ModelError::Unavailable(s) => w::ModelError::Unavailable(s),
        m::ModelError::NotRecorded(s) => w::ModelError::NotRecorded(s),
    }
}

pub(super) fn model_info_to_wit(i: m::ModelInfo) -> w::ModelInfo {
    w::ModelInfo {
        alias: i.alias,
        id: i.id,
        context_window: i.context_window,
        max_output_tokens: i.max_output_tokens,
        is_default: i.is_default,
    }
}

pub(super) fn spend_to_wit(s: m::Spend) -> w::Spend {
    w::Spend {
        calls: s.calls,
        usage: usage_to_wit(s.usage),
        cost_microdollars: s.cost_microdollars,
        tokens_left: s.tokens_left,
        cost_left_microdollars: s.cost_left_microdollars,
        calls_left_this_turn: s.calls_left_this_turn,
    }
}
