//! `teamhost permit` and `teamhost plan`: the person answers a teammate's
//! permission request or plan, from any terminal, through the one approval
//! path ([`crate::embed::decide`]: the person's answer wins whatever the
//! route; the decision is recorded in the home).

use clap::Args;
use serde_json::json;

use super::{Output, TeamArg};
use crate::approvals::{self, Answer, PermitAnswer, PlanAnswer};
use crate::embed::{decide, Answerer};
use crate::home::Home;
use crate::store::Store;

/// Arguments of `teamhost permit`.
#[derive(Debug, Args)]
pub struct PermitArgs {
    #[command(flatten)]
    team: TeamArg,
    /// The request id (`perm-…`), as in the lead's inbox.
    request_id: String,
    /// Let the call run.
    #[arg(long, conflicts_with = "deny", required_unless_present = "deny")]
    allow: bool,
    /// Refuse it.
    #[arg(long)]
    deny: bool,
    /// Why (given to the teammate with --deny).
    #[arg(long, default_value = "denied by the lead")]
    reason: String,
    /// With --allow: run it with this input instead (a JSON object).
    #[arg(long, value_name = "JSON")]
    input: Option<String>,
    /// With --allow: also apply the request's suggestions (e.g. add the rule
    /// it proposed) for the rest of the teammate's session.
    #[arg(long)]
    remember: bool,
}

/// Arguments of `teamhost plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    team: TeamArg,
    /// The request id (`plan_approval-…`), as in the lead's inbox.
    request_id: String,
    /// Approve the plan.
    #[arg(long, conflicts_with = "reject", required_unless_present = "reject")]
    approve: bool,
    /// Reject it (give --feedback).
    #[arg(long)]
    reject: bool,
    /// The mode the teammate works in once approved.
    #[arg(long, default_value = "default")]
    mode: String,
    /// What to change (with --reject).
    #[arg(long, default_value = "")]
    feedback: String,
}

pub(super) fn permit(
    home: &Home,
    store: &Store,
    out: &Output,
    a: PermitArgs,
) -> anyhow::Result<()> {
    let team = store.team(&a.team.team)?;
    let answer = if a.allow {
        let updated_input = match a.input {
            None => None,
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| {
                anyhow::anyhow!(
                    "--input must be a JSON object like '{{\"file_path\": \"x\"}}': {e}"
                )
            })?),
        };
        let permission_updates = if a.remember {
            approvals::suggestions(&team, &a.request_id)?
        } else {
            Vec::new()
        };
        PermitAnswer::Allow {
            updated_input,
            permission_updates,
        }
    } else {
        PermitAnswer::Deny { reason: a.reason }
    };
    let allowed = matches!(answer, PermitAnswer::Allow { .. });
    decide(
        home,
        &team,
        &Answerer::Person,
        &a.request_id,
        Answer::Permit(answer),
    )?;
    out.print(
        &json!({"request_id": a.request_id, "allowed": allowed}),
        || {
            format!(
                "{} {}",
                if allowed { "allowed" } else { "denied" },
                a.request_id
            )
        },
    )
}

pub(super) fn plan(home: &Home, store: &Store, out: &Output, a: PlanArgs) -> anyhow::Result<()> {
    let team = store.team(&a.team.team)?;
    let answer = if a.approve {
        let mode = a
            .mode
            .parse::<crate::sandbox::PermissionMode>()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        PlanAnswer::Approve { mode: Some(mode) }
    } else {
        PlanAnswer::Reject {
            feedback: a.feedback,
        }
    };
    let approved = matches!(answer, PlanAnswer::Approve { .. });
    decide(
        home,
        &team,
        &Answerer::Person,
        &a.request_id,
        Answer::Plan(answer),
    )?;
    out.print(
        &json!({"request_id": a.request_id, "approved": approved}),
        || {
            format!(
                "{} {}",
                if approved { "approved" } else { "rejected" },
                a.request_id
            )
        },
    )
}
