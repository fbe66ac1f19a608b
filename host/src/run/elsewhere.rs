//! After a resumed run on a shared store (`teamhost run --resume`): the
//! teammates another host took over before the resume
//! (`ResumeReport::adopted_elsewhere`) work there, not here. At the end of the run the lead asks them to shut down,
//! as it asks its own; their host ends once they have, and the team is kept
//! (not deleted under them).

use super::narrator::Narrator;
use crate::protocol::{ShutdownRequest, WireMessage};
use crate::store::{OutgoingMessage, Team};

/// Sends a shutdown request from `lead` to each of `elsewhere`'s teammates
/// (`(name, host)`), with `reason`, and says so.
pub(super) fn ask_to_stop(
    team: &Team,
    lead: &str,
    elsewhere: &[(String, String)],
    reason: &str,
    narrator: &dyn Narrator,
) -> anyhow::Result<()> {
    for (name, host) in elsewhere {
        let request = ShutdownRequest::new(name, lead, Some(reason.to_string()));
        team.send(name, OutgoingMessage::new(lead, request.to_text()))?;
        narrator.line(
            "run",
            format!(
                "asked {name} to shut down on host {host}, which runs it; the team is kept for it"
            ),
        );
    }
    Ok(())
}
