//! Asking the lead: the `permission_request` / `permission_response` round
//! trip one tool call waits on.
//!
//! The request goes to the lead's inbox (reference schema, with the sandbox's
//! suggestions). The call then waits for a `permission_response` with the same
//! `request_id` **from the lead** in the teammate's own inbox — woken at once
//! by a write in this process, by the fallback poll for a write from another
//! (`teamhost permit`). A response from anyone else (a teammate forging one) is
//! left where it is and changes nothing. No answer within
//! [`Limits::ask_timeout`](crate::sandbox::Limits) denies the call, and the
//! denial is recorded in the teammate's history as a `permission_response`
//! from `teamhost`, so the request no longer shows as waiting for the lead.
//!
//! When the host stops the teammate ([`Stopping`](crate::runtime::Stopping):
//! the team is shut down, the teammate killed) the answer can no longer
//! come: a wait in progress ends at once, denied and recorded the same way
//! with the reason, and a call that would ask from then on is denied
//! without asking.

use serde_json::Value;

use super::lead_line::LeadLine;
use super::{blocking, ToolGlue};
use crate::protocol::{PermissionOutcome, PermissionRequest};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::GuestError;
use crate::sandbox::{
    BashInput, EditInput, GlobInput, GrepInput, ReadInput, Suggestion, ToolCall, WriteInput,
};

impl ToolGlue<'_> {
    /// The teammate's line to its lead.
    pub(super) fn line(&self) -> LeadLine {
        LeadLine::new(self.fixed, self.team)
    }

    /// Asks the lead about `call` and waits for the answer. Returns the call
    /// to run (with the lead's updated input) or the denial.
    pub(super) async fn ask_lead(
        &mut self,
        call: ToolCall,
        reason: String,
        suggestions: Vec<crate::sandbox::Suggestion>,
    ) -> Result<ToolCall, GuestError> {
        let limits = self.fixed.limits.clone();
        if let Some(why) = self.team.stopping.reason() {
            return Err(WitError::Denied(format!(
                "{} needs the lead's permission ({reason}), but the host is stopping ({why}): the lead can no longer answer, so nothing was asked and the call was not run",
                call.display_name()
            ))
            .into());
        }
        if self.permissions.waiting() >= limits.max_pending_requests {
            return Err(WitError::Denied(format!(
                "{} permission request(s) already wait for the lead (max_pending_requests)",
                self.permissions.waiting()
            ))
            .into());
        }
        // A resumed teammate asking what its earlier life asked waits for
        // that request's answer: the lead answers each request once.
        let (id, tool_use_id) = match self
            .permissions
            .adopt_earlier(call.display_name(), &call.input_json())
        {
            Some(id) => (id, None),
            None => {
                let request = PermissionRequest::new(
                    self.fixed.identity.name.clone(),
                    call.display_name(),
                    format!("toolu_{}", random_suffix(24)),
                    describe(&call, &reason),
                    call.input_json(),
                )
                .with_suggestions(suggestions.iter().map(Suggestion::to_json).collect());
                let id = request.request_id.clone();
                let tool_use_id = request.tool_use_id.clone();
                self.line().send(&request).await?;
                (id, Some(tool_use_id))
            }
        };
        self.permissions.start_waiting();
        let answer = self.line().wait_for_answer(&id, limits.ask_timeout).await;
        self.permissions.done_waiting();
        let response = answer?;
        // A 2.1.332 lead may bind its verdict to the call; one bound to
        // another call is refused, whatever it says.
        if let Some(why) = response.binding_mismatch(
            tool_use_id.as_deref(),
            call.display_name(),
            &call.input_json(),
        ) {
            return Err(WitError::Denied(format!(
                "the lead's answer to {id} is for another call ({why}); the call was not run"
            ))
            .into());
        }
        match response.outcome() {
            Err(e) => Err(WitError::Denied(format!(
                "the lead's answer to {id} is malformed ({e}); the call was not run"
            ))
            .into()),
            Ok(PermissionOutcome::Denied(why)) => {
                Err(WitError::Denied(format!("the lead denied {id}: {why}")).into())
            }
            Ok(PermissionOutcome::Allowed(grant)) => {
                self.apply_grant(grant).await;
                Ok(with_input(&call, &grant.updated_input)?)
            }
        }
    }

    /// Applies the lead's grant to the permissions
    /// ([`Permissions::apply_grant`](crate::runtime::Permissions::apply_grant))
    /// and records a mode it switched to in the team's config.
    async fn apply_grant(&mut self, grant: &crate::protocol::PermissionGrant) {
        let me = self.fixed.identity.name.clone();
        if let Some(mode) = self.permissions.apply_grant(grant, &me) {
            let team = self.team.store.clone();
            if let Err(e) = blocking(move || team.set_mode(&me, mode.as_str())).await {
                // As before: a store error is logged, a failed call is not.
                let Some(e) = e.as_wit() else { return };
                tracing::warn!(teammate = %self.fixed.identity.name, error = %e, "could not record the new mode");
            }
        }
    }
}

/// The call with the lead's `updated_input`, which must fit the same tool.
fn with_input(call: &ToolCall, input: &Value) -> Result<ToolCall, WitError> {
    fn parse<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, WitError> {
        serde_json::from_value(v.clone()).map_err(|e| {
            WitError::Invalid(format!(
                "the lead's updated input does not fit the tool ({e}); nothing was run"
            ))
        })
    }
    Ok(match call {
        ToolCall::Read(_) => ToolCall::Read(parse::<ReadInput>(input)?),
        ToolCall::Write(_) => ToolCall::Write(parse::<WriteInput>(input)?),
        ToolCall::Edit(_) => ToolCall::Edit(parse::<EditInput>(input)?),
        ToolCall::Glob(_) => ToolCall::Glob(parse::<GlobInput>(input)?),
        ToolCall::Grep(_) => ToolCall::Grep(parse::<GrepInput>(input)?),
        ToolCall::Bash(_) => ToolCall::Bash(parse::<BashInput>(input)?),
        ToolCall::Coordination(kind) => ToolCall::Coordination(*kind),
    })
}

/// A one-line description for the lead ("Write notes.md: …").
fn describe(call: &ToolCall, reason: &str) -> String {
    let what = match call {
        ToolCall::Read(i) => i.file_path.clone(),
        ToolCall::Write(i) => i.file_path.clone(),
        ToolCall::Edit(i) => i.file_path.clone(),
        ToolCall::Glob(i) => i.pattern.clone(),
        ToolCall::Grep(i) => i.pattern.clone(),
        ToolCall::Bash(i) => i.command.clone(),
        ToolCall::Coordination(kind) => kind.wit_name().to_string(),
    };
    format!("{} {what} ({reason})", call.display_name())
}

pub(super) fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}
