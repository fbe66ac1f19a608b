//! [`Resumed`]: what a teammate brought back after its host died takes over
//! from its earlier life. Gathered from the team's files by the embedding
//! API (`Host::resume`, or `teamhost teammate --resumed` for one in its own
//! process) and applied by the assembly: its unfinished task comes back as
//! its first turn, its plan and permission requests still waiting for the
//! lead stay answerable.

use crate::protocol::PermissionRequest;

/// What a resumed teammate takes over. `Resumed::default()`: nothing (a
/// teammate resumed with no work in flight).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumed {
    /// Its task that was in progress, owned by it, when the host died, and
    /// that it had claimed through the host (the host's claim ledger, not
    /// only the task list, which any member can write): its first turn that
    /// is not a message, with the claim prompt.
    pub task: Option<String>,
    /// Tasks in progress under its name that it never claimed through the
    /// host (a peer or someone outside the host set them so): not handed
    /// back, left as they are for the lead to decide.
    pub unclaimed: Vec<String>,
    /// The id of its plan still waiting for the lead: the lead's answer to
    /// it is applied as if no crash had happened.
    pub pending_plan: Option<String>,
    /// Its permission requests still waiting for the lead. A tool call that
    /// asks for exactly the same (tool and input) waits for that request's
    /// answer, already given or still to come, instead of asking anew; each
    /// is used once.
    pub open_requests: Vec<PermissionRequest>,
}
