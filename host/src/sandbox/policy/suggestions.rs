//! What an ask offers the lead: the [`Suggestion`]s [`suggest`] picks for a
//! call (the reference's `permission_suggestions`, seeds 002 §4.8.1), and
//! their JSON both ways, since the same shapes come back in a response's
//! `permission_updates`.

use serde_json::{json, Map, Value};

use super::Target;
use crate::sandbox::mode::PermissionMode;
use crate::sandbox::rules::{quote_word, Rule, RuleError, ToolRules};
use crate::sandbox::ToolName;

/// One way the lead could grant a call for longer than once (the reference's
/// `permission_suggestions`; the same shapes come back in a response's
/// `permission_updates`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suggestion {
    /// `{type:"addRules", rules:[{toolName, ruleContent}], behavior, destination}`.
    AddRules {
        /// The rules.
        rules: Vec<RuleValue>,
        /// Allow, deny or ask.
        behavior: RuleBehavior,
        /// Where the grant lives.
        destination: Destination,
    },
    /// `{type:"addDirectories", directories, destination}`. The engine never
    /// suggests it (a teammate has exactly one directory); it is here so the
    /// lead's updates parse.
    AddDirectories {
        /// Absolute directories.
        directories: Vec<String>,
        /// Where the grant lives.
        destination: Destination,
    },
    /// `{type:"setMode", mode, destination}`.
    SetMode {
        /// The mode to switch to.
        mode: PermissionMode,
        /// Where the grant lives.
        destination: Destination,
    },
}

/// A rule as the reference writes it in suggestions: `Bash(git:*)` is
/// `{toolName:"Bash", ruleContent:"git:*"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleValue {
    /// `"Bash"`.
    pub tool_name: String,
    /// `"git:*"`; `None` for the whole tool.
    pub rule_content: Option<String>,
}

impl RuleValue {
    /// A rule on `tool` with `content`.
    pub fn new(tool: ToolName, content: Option<String>) -> RuleValue {
        RuleValue {
            tool_name: tool.as_str().to_owned(),
            rule_content: content,
        }
    }

    /// The rule text: `Tool` or `Tool(content)`.
    pub fn text(&self) -> String {
        match &self.rule_content {
            Some(content) => format!("{}({content})", self.tool_name),
            None => self.tool_name.clone(),
        }
    }

    /// Parses it as a [`Rule`], to add to a teammate's [`ToolRules`].
    pub fn to_rule(&self) -> Result<Rule, RuleError> {
        Rule::parse(&self.text())
    }

    /// `{toolName, ruleContent?}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("toolName".into(), Value::from(self.tool_name.as_str()));
        if let Some(content) = &self.rule_content {
            map.insert("ruleContent".into(), Value::from(content.as_str()));
        }
        Value::Object(map)
    }
}

/// An `addRules` suggestion's `behavior`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleBehavior {
    /// `"allow"`.
    Allow,
    /// `"deny"`.
    Deny,
    /// `"ask"`.
    Ask,
}

impl RuleBehavior {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleBehavior::Allow => "allow",
            RuleBehavior::Deny => "deny",
            RuleBehavior::Ask => "ask",
        }
    }

    fn parse(s: &str) -> Option<RuleBehavior> {
        [RuleBehavior::Allow, RuleBehavior::Deny, RuleBehavior::Ask]
            .into_iter()
            .find(|b| b.as_str() == s)
    }
}

/// Where a granted permission lives. teamhost keeps every grant for the
/// session; the others are the reference's settings files, kept so the
/// lead's answers parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// `"session"`: until the teammate stops.
    Session,
    /// `"localSettings"`.
    LocalSettings,
    /// `"projectSettings"`.
    ProjectSettings,
    /// `"userSettings"`.
    UserSettings,
    /// `"cliArg"`.
    CliArg,
}

impl Destination {
    /// The reference's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Destination::Session => "session",
            Destination::LocalSettings => "localSettings",
            Destination::ProjectSettings => "projectSettings",
            Destination::UserSettings => "userSettings",
            Destination::CliArg => "cliArg",
        }
    }

    fn parse(s: &str) -> Option<Destination> {
        [
            Destination::Session,
            Destination::LocalSettings,
            Destination::ProjectSettings,
            Destination::UserSettings,
            Destination::CliArg,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
    }
}

/// JSON that is not a suggestion teamhost understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuggestionError(pub String);

impl std::fmt::Display for SuggestionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid permission suggestion: {}", self.0)
    }
}

impl std::error::Error for SuggestionError {}

impl Suggestion {
    /// The reference's JSON, keys in its order:
    /// `{"type":"addRules","rules":[{"toolName":"Edit","ruleContent":"./src/main.rs"}],"behavior":"allow","destination":"session"}`.
    pub fn to_json(&self) -> Value {
        match self {
            Suggestion::AddRules {
                rules,
                behavior,
                destination,
            } => json!({
                "type": "addRules",
                "rules": rules.iter().map(RuleValue::to_json).collect::<Vec<_>>(),
                "behavior": behavior.as_str(),
                "destination": destination.as_str(),
            }),
            Suggestion::AddDirectories {
                directories,
                destination,
            } => json!({
                "type": "addDirectories",
                "directories": directories,
                "destination": destination.as_str(),
            }),
            Suggestion::SetMode { mode, destination } => json!({
                "type": "setMode",
                "mode": mode.as_str(),
                "destination": destination.as_str(),
            }),
        }
    }

    /// Parses one suggestion (or one of a response's `permission_updates`).
    pub fn from_json(value: &Value) -> Result<Suggestion, SuggestionError> {
        let err = |msg: String| SuggestionError(msg);
        let obj = value
            .as_object()
            .ok_or_else(|| err(format!("expected an object, got {value}")))?;
        let string = |key: &str| -> Result<&str, SuggestionError> {
            obj.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| err(format!("`{key}` is missing or not a string")))
        };
        let destination = {
            let d = string("destination")?;
            Destination::parse(d).ok_or_else(|| err(format!("unknown destination {d:?}")))?
        };
        match string("type")? {
            "addRules" => {
                let behavior = string("behavior")?;
                let behavior = RuleBehavior::parse(behavior)
                    .ok_or_else(|| err(format!("unknown behavior {behavior:?}")))?;
                let rules = obj
                    .get("rules")
                    .and_then(Value::as_array)
                    .ok_or_else(|| err("`rules` is missing or not an array".into()))?
                    .iter()
                    .map(|r| {
                        let tool_name = r
                            .get("toolName")
                            .and_then(Value::as_str)
                            .ok_or_else(|| err(format!("rule {r} has no `toolName`")))?;
                        let rule_content = match r.get("ruleContent") {
                            None | Some(Value::Null) => None,
                            Some(Value::String(s)) => Some(s.clone()),
                            Some(other) => {
                                return Err(err(format!("`ruleContent` {other} is not a string")))
                            }
                        };
                        Ok(RuleValue {
                            tool_name: tool_name.to_owned(),
                            rule_content,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Suggestion::AddRules {
                    rules,
                    behavior,
                    destination,
                })
            }
            "addDirectories" => {
                let directories = obj
                    .get("directories")
                    .and_then(Value::as_array)
                    .and_then(|a| {
                        a.iter()
                            .map(|d| d.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| err("`directories` is not an array of strings".into()))?;
                Ok(Suggestion::AddDirectories {
                    directories,
                    destination,
                })
            }
            "setMode" => {
                let mode = string("mode")?
                    .parse()
                    .map_err(|e: crate::sandbox::ParseModeError| err(e.to_string()))?;
                Ok(Suggestion::SetMode { mode, destination })
            }
            other => Err(err(format!(
                "unknown type {other:?}; teamhost knows addRules, addDirectories and setMode"
            ))),
        }
    }
}

/// The suggestions an ask carries.
pub(super) fn suggest(mode: PermissionMode, rules: &ToolRules, target: &Target) -> Vec<Suggestion> {
    let add = |values: Vec<RuleValue>| Suggestion::AddRules {
        rules: values,
        behavior: RuleBehavior::Allow,
        destination: Destination::Session,
    };
    match target {
        Target::Path { tool, path, .. } => {
            let family = match tool {
                ToolName::Read | ToolName::Glob | ToolName::Grep => ToolName::Read,
                ToolName::Write | ToolName::Edit => ToolName::Edit,
                ToolName::Bash
                | ToolName::SendMessage
                | ToolName::TaskCreate
                | ToolName::TaskGet
                | ToolName::TaskUpdate
                | ToolName::TaskList
                | ToolName::Agent
                | ToolName::WebFetch => *tool,
            };
            // Only an edit inside the directory asks (in `default`): reads
            // inside are allowed, and a path outside is denied before any ask.
            let rel = path.relative().unwrap_or_else(|| ".".into());
            let mut out = Vec::new();
            if mode == PermissionMode::Default {
                out.push(Suggestion::SetMode {
                    mode: PermissionMode::AcceptEdits,
                    destination: Destination::Session,
                });
            }
            out.push(add(vec![RuleValue::new(family, Some(format!("./{rel}")))]));
            out
        }
        Target::Command(command) => {
            if command.opaque {
                return Vec::new();
            }
            let mut values: Vec<RuleValue> = Vec::new();
            for part in rules.unallowed_parts(command) {
                let value = RuleValue::new(ToolName::Bash, Some(prefix_rule(part)));
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            if values.is_empty() {
                Vec::new()
            } else {
                vec![add(values)]
            }
        }
        Target::Coordination(_) => Vec::new(),
    }
}

/// `git status --short` → `git status:*`; `rm -rf x` → `rm:*`: the command
/// and, when the second word looks like a subcommand, that too.
fn prefix_rule(part: &[String]) -> String {
    let subcommand = part.get(1).is_some_and(|w| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    });
    let n = if subcommand { 2 } else { 1 };
    let words: Vec<String> = part.iter().take(n).map(|w| quote_word(w)).collect();
    format!("{}:*", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_render_the_reference_shapes_and_parse_back() {
        let all = vec![
            Suggestion::AddRules {
                rules: vec![
                    RuleValue::new(ToolName::Read, Some("//tmp/**".into())),
                    RuleValue::new(ToolName::Bash, None),
                ],
                behavior: RuleBehavior::Allow,
                destination: Destination::Session,
            },
            Suggestion::AddDirectories {
                directories: vec!["/tmp".into(), "/tmp/delegate-test".into()],
                destination: Destination::Session,
            },
            Suggestion::SetMode {
                mode: PermissionMode::AcceptEdits,
                destination: Destination::Session,
            },
        ];
        let texts: Vec<String> = all.iter().map(|s| s.to_json().to_string()).collect();
        assert_eq!(
            texts,
            [
                r#"{"type":"addRules","rules":[{"toolName":"Read","ruleContent":"//tmp/**"},{"toolName":"Bash"}],"behavior":"allow","destination":"session"}"#,
                r#"{"type":"addDirectories","directories":["/tmp","/tmp/delegate-test"],"destination":"session"}"#,
                r#"{"type":"setMode","mode":"acceptEdits","destination":"session"}"#,
            ]
        );
        for s in &all {
            assert_eq!(&Suggestion::from_json(&s.to_json()).unwrap(), s);
        }
    }

    #[test]
    fn malformed_suggestions_are_refused_with_what_is_wrong() {
        let cases = [
            (json!("x"), "expected an object"),
            (
                json!({"type": "addRules", "destination": "session", "behavior": "allow"}),
                "`rules`",
            ),
            (
                json!({"type": "setMode", "mode": "yolo", "destination": "session"}),
                "valid modes are",
            ),
            (
                json!({"type": "removeRules", "destination": "session"}),
                "unknown type",
            ),
            (
                json!({"type": "setMode", "mode": "plan", "destination": "elsewhere"}),
                "unknown destination",
            ),
        ];
        for (value, expected) in cases {
            let err = Suggestion::from_json(&value).unwrap_err().to_string();
            assert!(err.contains(expected), "{value}: {err}");
        }
    }

    #[test]
    fn a_rule_value_becomes_a_rule() {
        let value = RuleValue::new(ToolName::Bash, Some("git:*".into()));
        assert_eq!(value.text(), "Bash(git:*)");
        assert_eq!(value.to_rule().unwrap().text(), "Bash(git:*)");
        let bad = RuleValue::new(ToolName::Bash, Some("".into()));
        assert!(bad.to_rule().is_err());
    }
}
