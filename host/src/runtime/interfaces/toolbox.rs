//! `teamhost:agent/toolbox`: the tool definitions a model is given, and a
//! model-written call run through the same glue as a direct call.
//!
//! `invoke` parses the model's JSON ([`crate::toolbox::input`]), then calls
//! this teammate's own `tools`, `messaging` or `tasks` host functions, so
//! the sandbox decides, the lead may be asked and the limits count exactly
//! as for a component calling them itself; the result is written as text
//! for the model ([`crate::toolbox::format`]). Every failure (bad input, a
//! refusal, a tool error) is an error result, never a trap; what traps a
//! direct call (a coordination limit breached) traps here too.

use super::model_convert::tool_definition_to_wit;
use super::ToolGlue;
use crate::network::FetchError;
use crate::runtime::bindings::messaging::Host as Messaging;
use crate::runtime::bindings::model::{ToolDefinition, ToolResult, ToolUse};
use crate::runtime::bindings::protocol::{PlanResponse, ShutdownResponse};
use crate::runtime::bindings::tasks::{
    Host as Tasks, NewTask, OwnerChange, Task, TaskStatus, TaskUpdate,
};
use crate::runtime::bindings::team::PermissionMode as WitMode;
use crate::runtime::bindings::toolbox::Host;
use crate::runtime::bindings::tools::{GrepMode, Host as Tools};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::subagent_host::{StartRequest, Started, SubagentInfo, SubagentStatus};
use crate::runtime::GuestError;
use crate::sandbox::{CoordinationKind, Decision, MessagingCall, TasksCall, ToolCall, ToolName};
use crate::toolbox::agent_format::{self, AgentReport};
use crate::toolbox::definitions::{BASH_NO_NETWORK, BASH_WITH_NETWORK};
use crate::toolbox::format::{self, TaskView};
use crate::toolbox::input::{self, AgentCall, Call, SendCall, TaskUpdateCall, UpdateStatus};
use crate::toolbox::{definition, lead_tools, TOOLS};

/// A call's outcome: the text, and whether it is an error.
type Outcome = (String, bool);

fn ok(text: String) -> wasmtime::Result<Outcome> {
    Ok((text, false))
}

/// A failed call as an error result for the model; a trap stays a trap.
fn failed(e: impl Into<GuestError>) -> wasmtime::Result<Outcome> {
    Ok((format::error(&error_text(&e.into().into_wit()?)), true))
}

/// A WIT error as a sentence for the model.
fn error_text(e: &WitError) -> String {
    match e {
        WitError::Denied(m) => format!("permission denied: {m}"),
        WitError::NotFound(m) => format!("not found: {m}"),
        WitError::Conflict(m) => format!("conflict: {m}"),
        WitError::Invalid(m) => format!("invalid: {m}"),
        WitError::Unavailable(m) => format!("unavailable: {m}"),
    }
}

/// A sample call per tool, for the sandbox's verdict on the tool as a whole.
fn sample(tool: ToolName) -> ToolCall {
    match tool {
        ToolName::Read => ToolCall::read("file"),
        ToolName::Write => ToolCall::write("file", ""),
        ToolName::Edit => ToolCall::edit("file", "a", "b"),
        ToolName::Glob => ToolCall::glob("*", None),
        ToolName::Grep => ToolCall::grep("x", None),
        ToolName::Bash => ToolCall::bash("true"),
        ToolName::SendMessage => {
            ToolCall::Coordination(CoordinationKind::Messaging(MessagingCall::Send))
        }
        ToolName::TaskCreate => ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Create)),
        ToolName::TaskGet => ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Get)),
        ToolName::TaskUpdate => ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::Update)),
        ToolName::TaskList => ToolCall::Coordination(CoordinationKind::Tasks(TasksCall::List)),
        ToolName::Agent => ToolCall::Coordination(CoordinationKind::Subagents),
        ToolName::WebFetch => ToolCall::Coordination(CoordinationKind::Fetch),
    }
}

/// A finished sub-agent, for the result text.
fn report_of(i: &SubagentInfo) -> AgentReport<'_> {
    AgentReport {
        id: &i.id,
        description: &i.description,
        status: i.status.as_str(),
        content: &i.output,
        total_tokens: i.total_tokens,
        tool_uses: i.total_tool_use_count,
        duration_ms: i.total_duration_ms,
        worktree: i.worktree.as_deref(),
    }
}

fn view(t: &Task) -> TaskView {
    TaskView {
        id: t.id.clone(),
        subject: t.subject.clone(),
        description: t.description.clone(),
        status: match t.status {
            TaskStatus::Pending => "pending",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Completed => "completed",
        },
        owner: t.owner.clone(),
        blocks: t.blocks.clone(),
        blocked_by: t.blocked_by.clone(),
    }
}

impl ToolGlue<'_> {
    async fn run_call(&mut self, call: Call) -> wasmtime::Result<Outcome> {
        match call {
            Call::Read {
                file_path,
                offset,
                limit,
            } => match Tools::read(self, file_path, offset, limit).await {
                Ok(r) => ok(format::read(
                    &r.content,
                    r.lines,
                    r.next_offset,
                    r.truncated,
                )),
                Err(e) => failed(e),
            },
            Call::Write { file_path, content } => {
                let bytes = content.len();
                match Tools::write(self, file_path.clone(), content).await {
                    Ok(()) => ok(format::write(&file_path, bytes)),
                    Err(e) => failed(e),
                }
            }
            Call::Edit {
                file_path,
                old_string,
                new_string,
                replace_all,
            } => {
                match Tools::edit(self, file_path.clone(), old_string, new_string, replace_all)
                    .await
                {
                    Ok(n) => ok(format::edit(&file_path, n)),
                    Err(e) => failed(e),
                }
            }
            Call::Glob { pattern, path } => match Tools::glob(self, pattern, path).await {
                Ok(paths) => ok(format::glob(&paths)),
                Err(e) => failed(e),
            },
            Call::Grep {
                pattern,
                path,
                glob,
                mode,
                case_insensitive,
                head_limit,
                offset,
            } => {
                let wit_mode = match mode {
                    input::GrepMode::Content => GrepMode::Content,
                    input::GrepMode::FilesWithMatches => GrepMode::FilesWithMatches,
                    input::GrepMode::Count => GrepMode::Count,
                };
                match Tools::grep(self, pattern, path, glob, wit_mode, case_insensitive).await {
                    Ok(g) => ok(format::grep(
                        mode,
                        &g.text,
                        &g.files,
                        g.truncated,
                        head_limit,
                        offset,
                    )),
                    Err(e) => failed(e),
                }
            }
            Call::Bash {
                command,
                timeout_ms,
            } => match Tools::bash(self, command, timeout_ms).await {
                Ok(b) => Ok(format::bash(
                    &b.stdout,
                    &b.stderr,
                    b.exit_code,
                    b.timed_out,
                    b.truncated,
                )),
                Err(e) => failed(e),
            },
            Call::WebFetch { url, prompt } => self.run_web_fetch(url, prompt).await,
            Call::Send(send) => self.run_send(send).await,
            Call::TaskCreate {
                subject,
                description,
                active_form,
                metadata,
            } => {
                let new = NewTask {
                    subject,
                    description,
                    active_form,
                    metadata,
                };
                match Tasks::create(&mut self.coordination_glue(), new).await {
                    Ok(t) => ok(format::task_created(&t.id, &t.subject)),
                    Err(e) => failed(e),
                }
            }
            Call::TaskGet { id } => match Tasks::get(&mut self.coordination_glue(), id).await {
                Ok(t) => ok(format::task(&view(&t))),
                Err(e) => failed(e),
            },
            Call::TaskList => match Tasks::list(&mut self.coordination_glue()).await {
                Ok(tasks) => ok(format::task_list(
                    &tasks.iter().map(view).collect::<Vec<_>>(),
                )),
                Err(e) => failed(e),
            },
            Call::TaskUpdate(update) => self.run_task_update(update).await,
            Call::Agent(agent) => self.run_agent(agent, None).await,
            Call::TaskOutput {
                task_id,
                block,
                timeout_ms,
            } => {
                let host = match self.subagent_glue().host() {
                    Ok(h) => h,
                    Err(e) => return failed(e),
                };
                let info = if block {
                    host.wait(&task_id, std::time::Duration::from_millis(timeout_ms))
                        .await
                } else {
                    host.output(&task_id)
                };
                match info {
                    Ok(i) => ok(agent_format::task_output(&report_of(&i), block)),
                    Err(e) => failed(e),
                }
            }
            Call::TaskStop { task_id } => {
                let stopped = self
                    .subagent_glue()
                    .host()
                    .and_then(|h| Ok(h.stop(&task_id)?));
                match stopped {
                    Ok(i) => ok(agent_format::task_stopped(&i.id, &i.description)),
                    Err(e) => failed(e),
                }
            }
        }
    }

    /// The `Agent` tool: a sub-agent started through the same glue as
    /// `subagents.run` / `spawn`; its result in the reference's form.
    async fn run_agent(
        &mut self,
        a: AgentCall,
        tool_use_id: Option<String>,
    ) -> wasmtime::Result<Outcome> {
        let req = StartRequest {
            description: a.description,
            prompt: a.prompt,
            subagent_type: a.subagent_type,
            model: a.model,
            name: a.name,
            mode: None,
            worktree: a.worktree,
            tool_use_id,
            background: a.run_in_background,
        };
        match self.subagent_glue().start(req).await {
            Ok(Started::Launched(info)) => ok(agent_format::async_launched(&info.id)),
            Ok(Started::Finished(info)) => {
                let text = agent_format::completed(&report_of(&info));
                Ok((text, info.status != SubagentStatus::Completed))
            }
            Err(e) => failed(e),
        }
    }

    async fn run_send(&mut self, send: SendCall) -> wasmtime::Result<Outcome> {
        let result = match send {
            SendCall::Text { to, text, summary } if to == "*" => {
                Messaging::broadcast(&mut self.coordination_glue(), text, summary)
                    .await
                    .map(|d| format::broadcast(&d.message, &d.recipients))
            }
            SendCall::Text { to, text, .. }
                if self.subagents.as_ref().is_some_and(|h| h.knows(&to)) =>
            {
                self.subagent_glue().host().and_then(|h| {
                    let finished = h
                        .output(&to)
                        .is_ok_and(|i| i.status != SubagentStatus::Running);
                    let info = h.send(&to, text)?;
                    Ok(agent_format::sent_to_agent(&info.id, finished))
                })
            }
            SendCall::Text { to, text, summary } => {
                Messaging::send(&mut self.coordination_glue(), to, text, summary)
                    .await
                    .map(|d| {
                        let r = &d.routing;
                        format::sent(
                            &d.message,
                            &r.sender,
                            &r.target,
                            r.target_color.as_deref(),
                            r.summary.as_deref(),
                            &r.content,
                        )
                    })
            }
            SendCall::ShutdownRequest { to, reason } => {
                Messaging::request_shutdown(&mut self.coordination_glue(), to, reason)
                    .await
                    .map(|d| format::shutdown_requested(&d.message, &d.request_id, &d.target))
            }
            SendCall::ShutdownResponse {
                request_id,
                approve,
                reason,
            } => {
                let response = if approve {
                    ShutdownResponse::Approve
                } else {
                    ShutdownResponse::Reject(reason.unwrap_or_else(|| "no reason given".into()))
                };
                Messaging::respond_shutdown(&mut self.coordination_glue(), request_id, response)
                    .await
                    .map(|()| {
                        format::answered(if approve {
                            "Shutdown approved"
                        } else {
                            "Shutdown rejected"
                        })
                    })
            }
            SendCall::PlanResponse {
                to,
                request_id,
                approve,
                feedback,
            } => {
                let response = if approve {
                    PlanResponse::Approve(WitMode::Default)
                } else {
                    PlanResponse::Reject(feedback.unwrap_or_else(|| "no feedback given".into()))
                };
                Messaging::respond_plan_approval(
                    &mut self.coordination_glue(),
                    to,
                    request_id,
                    response,
                )
                .await
                .map(|()| {
                    format::answered(if approve {
                        "Plan approved"
                    } else {
                        "Plan rejected"
                    })
                })
            }
        };
        Ok(match result {
            Ok(text) => (text, false),
            Err(e) => (format::send_failed(&error_text(&e.into_wit()?)), true),
        })
    }

    async fn run_task_update(&mut self, u: TaskUpdateCall) -> wasmtime::Result<Outcome> {
        if u.status == Some(UpdateStatus::Deleted) {
            return match Tasks::delete(&mut self.coordination_glue(), u.id.clone()).await {
                Ok(()) => ok(format!("Updated task #{} deleted", u.id)),
                Err(e) => failed(e),
            };
        }
        let mut changed = Vec::new();
        for (field, set) in [
            ("subject", u.subject.is_some()),
            ("description", u.description.is_some()),
            ("activeForm", u.active_form.is_some()),
            ("status", u.status.is_some()),
            ("owner", u.owner.is_some()),
            ("metadata", u.metadata.is_some()),
        ] {
            if set {
                changed.push(field);
            }
        }
        if !changed.is_empty() {
            let update = TaskUpdate {
                subject: u.subject,
                description: u.description,
                active_form: u.active_form,
                status: u.status.map(|s| match s {
                    UpdateStatus::Pending => TaskStatus::Pending,
                    UpdateStatus::InProgress => TaskStatus::InProgress,
                    UpdateStatus::Completed | UpdateStatus::Deleted => TaskStatus::Completed,
                }),
                owner: u.owner.map(|o| {
                    if o.trim().is_empty() {
                        OwnerChange::Unassign
                    } else {
                        OwnerChange::Assign(o)
                    }
                }),
                metadata: u.metadata,
            };
            if let Err(e) = Tasks::update(&mut self.coordination_glue(), u.id.clone(), update).await
            {
                return failed(e);
            }
        }
        for blocked in &u.add_blocks {
            if let Err(e) =
                Tasks::add_dependency(&mut self.coordination_glue(), blocked.clone(), u.id.clone())
                    .await
            {
                return failed(e);
            }
        }
        for blocker in &u.add_blocked_by {
            if let Err(e) =
                Tasks::add_dependency(&mut self.coordination_glue(), u.id.clone(), blocker.clone())
                    .await
            {
                return failed(e);
            }
        }
        if !u.add_blocks.is_empty() {
            changed.push("blocks");
        }
        if !u.add_blocked_by.is_empty() {
            changed.push("blockedBy");
        }
        ok(format::task_updated(&u.id, &changed))
    }
}

impl ToolGlue<'_> {
    /// WebFetch: allowed by the sandbox like a coordination call (a deny
    /// rule `WebFetch` refuses it), then fetched through the teammate's
    /// network, whose rules and questions decide the hosts.
    async fn run_web_fetch(&mut self, url: String, prompt: String) -> wasmtime::Result<Outcome> {
        if let Err(e) = self
            .permissions
            .authorize_coordination(CoordinationKind::Fetch)
        {
            return failed(e);
        }
        let Some(network) = self.tools.network.clone() else {
            return failed(WitError::Unavailable(
                "this teammate has no network (its manifest entry's [teammate.network] gives it one); nothing was fetched"
                    .into(),
            ));
        };
        match network.fetch(&url).await {
            Ok(f) => ok(format::web_fetch(
                &f.url,
                f.status,
                &f.content_type,
                &f.text,
                f.truncated,
                &f.redirects,
                &prompt,
                self.tools.tools.limits().max_output_bytes,
            )),
            Err(e) => failed(match e {
                FetchError::Refused { .. } => WitError::Denied(e.to_string()),
                FetchError::BadUrl(_) | FetchError::NotText { .. } => {
                    WitError::Invalid(e.to_string())
                }
                _ => WitError::Unavailable(e.to_string()),
            }),
        }
    }
}

impl Host for ToolGlue<'_> {
    async fn definitions(&mut self) -> wasmtime::Result<Vec<ToolDefinition>> {
        let mut tools: Vec<_> = TOOLS
            .iter()
            .filter(|spec| {
                !matches!(
                    self.permissions.decide(&sample(spec.tool)),
                    Decision::Deny { .. }
                )
            })
            // `Agent` only for an agent with a sub-agent seat, `WebFetch`
            // only for one with a network.
            .filter(|spec| spec.tool != ToolName::Agent || self.subagents.is_some())
            .filter(|spec| spec.tool != ToolName::WebFetch || self.tools.network.is_some())
            .map(definition)
            .map(|mut d| {
                if d.name == "Bash" && self.tools.network.is_some() {
                    d.description = d.description.replace(BASH_NO_NETWORK, BASH_WITH_NETWORK);
                }
                d
            })
            .collect();
        // A lead's `Agent` tool spawns teammates too (and only them in
        // delegate mode, where the sandbox denies sub-agents).
        let sub_agents = tools.iter().any(|d| d.name == "Agent");
        let lead = self.lead_definitions(sub_agents);
        if !lead.is_empty() {
            tools.retain(|d| d.name != "Agent");
            tools.extend(lead);
        }
        Ok(tools.into_iter().map(tool_definition_to_wit).collect())
    }

    async fn invoke(&mut self, call: ToolUse) -> wasmtime::Result<ToolResult> {
        if let Some(h) = &self.subagents {
            h.count_tool_use();
        }
        // A lead's calls go to its seat (or are refused to a non-lead)
        // before anything reads them as a teammate's.
        if let Some(lead_call) = lead_tools::parse(&call.name, &call.input) {
            let (content, is_error) = match lead_call {
                Ok(c) => self.run_lead(c).await,
                Err(e) => (format::error(&e), true),
            };
            return Ok(ToolResult {
                tool_use_id: call.id,
                content,
                is_error,
            });
        }
        let (content, is_error) = match input::parse(&call.name, &call.input) {
            Ok(Call::Agent(agent)) => self.run_agent(agent, Some(call.id.clone())).await?,
            Ok(parsed) => self.run_call(parsed).await?,
            Err(e) => (format::error(&e), true),
        };
        Ok(ToolResult {
            tool_use_id: call.id,
            content,
            is_error,
        })
    }
}
