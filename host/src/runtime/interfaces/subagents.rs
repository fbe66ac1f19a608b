//! `teamhost:agent/subagents`: start, message, read and stop sub-agents.
//!
//! Glue only: the `Agent` tool rule is checked here (a deny rule of the
//! caller, or a sub-agent's definition without `Agent`, refuses every call
//! but `whoami` and `report`), then the call goes to the caller's
//! [`SubagentHost`](crate::runtime::subagent_host::SubagentHost), which
//! holds the lifecycle. A caller without one (a teammate assembled without
//! sub-agents) gets `denied`.

use std::sync::Arc;

use super::SubagentGlue;
use crate::runtime::bindings::subagents::{Context, Host, Info, Start, Status};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::subagent_host::{
    Caller, StartRequest, Started, SubagentError, SubagentHost, SubagentInfo, SubagentStatus,
};
use crate::sandbox::CoordinationKind;

/// A host error as the WIT error of the same kind.
pub(crate) fn to_wit(e: SubagentError) -> WitError {
    match e {
        SubagentError::Denied(m) => WitError::Denied(m),
        SubagentError::NotFound(m) => WitError::NotFound(m),
        SubagentError::Invalid(m) => WitError::Invalid(m),
        SubagentError::Unavailable(m) => WitError::Unavailable(m),
    }
}

pub(crate) fn info_to_wit(i: SubagentInfo) -> Info {
    Info {
        id: i.id,
        name: i.name,
        description: i.description,
        subagent_type: i.subagent_type,
        status: match i.status {
            SubagentStatus::Running => Status::Running,
            SubagentStatus::Completed => Status::Completed,
            SubagentStatus::Failed => Status::Failed,
            SubagentStatus::Killed => Status::Killed,
        },
        output: i.output,
        depth: i.depth,
        worktree: i.worktree,
        total_tokens: i.total_tokens,
        total_tool_use_count: i.total_tool_use_count,
        total_duration_ms: i.total_duration_ms,
    }
}

impl SubagentGlue<'_> {
    /// The caller's host, once its permissions allow the `Agent` tool.
    pub(crate) fn host(&self) -> Result<Arc<dyn SubagentHost>, WitError> {
        self.permissions
            .authorize_coordination(CoordinationKind::Subagents)?;
        self.fixed.subagents.clone().ok_or_else(|| {
            WitError::Denied(
                "this agent may not start sub-agents (its host gave it no sub-agent seat)".into(),
            )
        })
    }

    fn caller(&self) -> Caller {
        Caller {
            mode: self.permissions.mode(),
            rules: self.permissions.rules().clone(),
        }
    }

    /// Starts a sub-agent (the `Agent` tool and `run`/`launch`).
    pub(crate) async fn start(&self, req: StartRequest) -> Result<Started, WitError> {
        let host = self.host()?;
        host.start(self.caller(), req).await.map_err(to_wit)
    }
}

fn request(s: Start, background: bool) -> StartRequest {
    StartRequest {
        description: s.description,
        prompt: s.prompt,
        subagent_type: s.subagent_type,
        model: s.model,
        name: s.name,
        mode: s.mode,
        worktree: s.worktree,
        tool_use_id: s.tool_use_id,
        background,
    }
}

impl Host for SubagentGlue<'_> {
    async fn run(&mut self, req: Start) -> wasmtime::Result<Result<Info, WitError>> {
        Ok(self.start(request(req, false)).await.map(|s| match s {
            Started::Finished(i) | Started::Launched(i) => info_to_wit(i),
        }))
    }

    async fn launch(&mut self, req: Start) -> wasmtime::Result<Result<String, WitError>> {
        Ok(self.start(request(req, true)).await.map(|s| match s {
            Started::Finished(i) | Started::Launched(i) => i.id,
        }))
    }

    async fn send(
        &mut self,
        to: String,
        message: String,
    ) -> wasmtime::Result<Result<(), WitError>> {
        Ok(self
            .host()
            .and_then(|h| h.send(&to, message).map(|_| ()).map_err(to_wit)))
    }

    async fn output(&mut self, id: String) -> wasmtime::Result<Result<Info, WitError>> {
        Ok(self
            .host()
            .and_then(|h| h.output(&id).map(info_to_wit).map_err(to_wit)))
    }

    async fn stop(&mut self, id: String) -> wasmtime::Result<Result<(), WitError>> {
        Ok(self
            .host()
            .and_then(|h| h.stop(&id).map(|_| ()).map_err(to_wit)))
    }

    async fn list(&mut self) -> wasmtime::Result<Vec<Info>> {
        Ok(match self.host() {
            Ok(h) => h.list().into_iter().map(info_to_wit).collect(),
            Err(_) => Vec::new(),
        })
    }

    async fn whoami(&mut self) -> wasmtime::Result<Option<Context>> {
        Ok(self
            .fixed
            .subagents
            .as_ref()
            .and_then(|h| h.context())
            .map(|c| Context {
                id: c.id,
                parent: c.parent,
                system_prompt: c.system_prompt,
                depth: c.depth,
            }))
    }

    async fn report(&mut self, text: String) -> wasmtime::Result<()> {
        if let Some(h) = &self.fixed.subagents {
            h.report(text);
        }
        Ok(())
    }
}
