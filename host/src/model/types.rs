//! The host's own form of a model exchange: the `teamhost:agent/model` WIT
//! types as plain Rust, serialisable (cassettes store them as JSON with the
//! WIT's kebab-case names). Providers map these onto their wire formats; the
//! WIT glue converts them to and from the generated bindings.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The agent's side (and tool results).
    User,
    /// The model.
    Assistant,
}

/// A tool the model may call; `input_schema` is JSON Schema as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: String,
}

/// A call the model wants made; `input` is a JSON object as text (possibly
/// invalid: models can write anything).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: String,
}

/// The answer to a [`ToolUse`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ToolResult {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

/// Reasoning the provider showed, with its signature (sent back unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Thinking {
    pub text: String,
    pub signature: String,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContentBlock {
    Text(String),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
    Thinking(Thinking),
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolChoice {
    Auto,
    Any,
    None,
    Tool(String),
}

/// A completion request as the guest made it. `model` is an alias (`""`: the
/// teammate's default); the broker resolves it before a provider sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Request {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
}

impl Message {
    /// A user message of one text block.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text(text.into())],
        }
    }

    /// An assistant message of one text block.
    pub fn assistant(text: impl Into<String>) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text(text.into())],
        }
    }
}

impl Request {
    /// A request of `messages` to the teammate's default model, with
    /// nothing else set.
    pub fn new(messages: Vec<Message>) -> Request {
        Request {
            model: String::new(),
            system: None,
            messages,
            tools: Vec::new(),
            tool_choice: None,
            max_tokens: None,
            temperature: None,
            stop_sequences: Vec::new(),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    Other(String),
}

/// Tokens one call used (or, summed, a teammate's whole use).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Usage {
    /// Input tokens not read from or written to the prompt cache.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Every token counted, input and output, cached or not: what a token
    /// budget is charged.
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.cache_write_tokens)
    }

    /// `self + other`, saturating.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Response {
    /// The provider's message id.
    pub id: String,
    /// The provider's model id (not the alias).
    pub model: String,
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

/// Why a completion failed, as the guest sees it (the WIT `model-error`).
/// No case ever carries a key, a header or a provider URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "kebab-case")]
pub enum ModelError {
    #[error("denied: {0}")]
    Denied(String),
    #[error("budget exhausted: {0}")]
    BudgetExhausted(String),
    #[error("rate limited (retry after {retry_after_ms} ms): {message}")]
    #[serde(rename_all = "kebab-case")]
    RateLimited {
        retry_after_ms: u64,
        message: String,
    },
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("unavailable: {0}")]
    Unavailable(String),
    #[error("not recorded: {0}")]
    NotRecorded(String),
}

/// A model a teammate may ask for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ModelInfo {
    pub alias: String,
    pub id: String,
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub is_default: bool,
}

/// What a teammate has spent and has left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Spend {
    pub calls: u64,
    pub usage: Usage,
    pub cost_microdollars: u64,
    pub tokens_left: Option<u64>,
    pub cost_left_microdollars: Option<u64>,
    pub calls_left_this_turn: Option<u32>,
    /// Calls whose provider reported no usage, charged the host's estimate
    /// instead (never zero: a budget must go down with every call).
    #[serde(default)]
    pub estimated_calls: u64,
    /// The teammate's cost budget (microdollars), when it has one.
    #[serde(default)]
    pub budget_microdollars: Option<u64>,
    /// What the whole team spent (microdollars), when it has a budget.
    #[serde(default)]
    pub team_spent_microdollars: Option<u64>,
    /// The team's cost budget (microdollars), when it has one.
    #[serde(default)]
    pub team_budget_microdollars: Option<u64>,
    /// What a lead gave its teammates out of its cost budget
    /// (microdollars); 0 for a teammate.
    #[serde(default)]
    pub given_microdollars: u64,
}
