//! `teamhost shutdown --team T NAME`: the lead asks a teammate to shut down,
//! with the reference's `shutdown_request` in the teammate's inbox. The
//! teammate answers `shutdown_approved` (and stops) or `shutdown_rejected`
//! (with a reason) in the lead's inbox; `teamhost inbox --team T team-lead`
//! or `teamhost watch` shows the answer.

use clap::Args;
use serde_json::json;

use super::{Output, TeamArg};
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::store::{OutgoingMessage, Store};

/// Arguments of `teamhost shutdown`.
#[derive(Debug, Args)]
pub struct ShutdownArgs {
    #[command(flatten)]
    team: TeamArg,
    /// The teammate to ask.
    name: String,
    /// Why (the teammate reads it).
    #[arg(long)]
    reason: Option<String>,
}

pub(super) fn shutdown(store: &Store, out: &Output, a: ShutdownArgs) -> anyhow::Result<()> {
    let team = store.team(&a.team.team)?;
    let config = team.config()?;
    let lead = config.lead_name().to_string();
    if a.name == lead {
        anyhow::bail!(
            "{} is the team's lead; a shutdown request goes to a teammate (members: {})",
            a.name,
            config.member_names().join(", ")
        );
    }
    let request = ShutdownRequest::new(&a.name, lead.clone(), a.reason.clone());
    team.send(&a.name, OutgoingMessage::new(lead, request.to_text()))?;
    out.print(
        &json!({ "requestId": request.request_id, "to": a.name }),
        || {
            format!(
                "asked {} to shut down ({}); its answer arrives in the lead's inbox",
                a.name, request.request_id
            )
        },
    )
}
