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
    Caller, StartRequest, Started, SubagentHost, SubagentInfo, SubagentStatus,
};
use crate::runtime::GuestError;
use crate::sandbox::CoordinationKind;

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
    pub(crate) fn host(&self) -> Result<Arc<dyn SubagentHost>, GuestError> {
        self.permissions
            .authorize_coordination(CoordinationKind::Subagents)?;
        let host = self.subagents.clone().ok_or_else(|| {
            WitError::Denied(
                "this agent may not start sub-agents (its host gave it no sub-agent seat)".into(),
            )
        })?;
        Ok(host)
    }

    fn caller(&self) -> Caller {
        Caller {
            mode: self.permissions.mode(),
            rules: self.permissions.rules().clone(),
        }
    }

    /// Starts a sub-agent (the `Agent` tool and `run`/`launch`).
    pub(crate) async fn start(&self, req: StartRequest) -> Result<Started, GuestError> {
        let host = self.host()?;
        Ok(host.start(self.caller(), req).await?)
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
    async fn run(&mut self, req: Start) -> Result<Info, GuestError> {
        match self.start(request(req, false)).await? {
            Started::Finished(i) | Started::Launched(i) => Ok(info_to_wit(i)),
        }
    }

    async fn launch(&mut self, req: Start) -> Result<String, GuestError> {
        match self.start(request(req, true)).await? {
            Started::Finished(i) | Started::Launched(i) => Ok(i.id),
        }
    }

    async fn send(&mut self, to: String, message: String) -> Result<(), GuestError> {
        self.host()?.send(&to, message)?;
        Ok(())
    }

    async fn output(&mut self, id: String) -> Result<Info, GuestError> {
        Ok(info_to_wit(self.host()?.output(&id)?))
    }

    async fn stop(&mut self, id: String) -> Result<(), GuestError> {
        self.host()?.stop(&id)?;
        Ok(())
    }

    async fn list(&mut self) -> wasmtime::Result<Vec<Info>> {
        Ok(match self.host() {
            Ok(h) => h.list().into_iter().map(info_to_wit).collect(),
            Err(_) => Vec::new(),
        })
    }

    async fn whoami(&mut self) -> wasmtime::Result<Option<Context>> {
        Ok(self
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
        if let Some(h) = &self.subagents {
            h.report(text);
        }
        Ok(())
    }
}
