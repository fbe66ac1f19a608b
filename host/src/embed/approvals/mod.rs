//! The one approval path and the policy desk: every answer to a teammate's
//! permission or plan request (the person's, the lead component's, the
//! policy's) is routed, held to its answerer's grant and recorded here.
//!
//! | file | what it owns |
//! |---|---|
//! | `decide.rs` | [`decide`]: find the request, check it still waits, route it, hold a lead's answer to its own grant, record the decision, deliver the answer |
//! | `desk.rs` | [`ApprovalDesk`]: the host's task that answers, as they arrive, the requests the routes give to the policy |

mod decide;
mod desk;

pub(in crate::embed) use decide::decide_recording;
pub use decide::{decide, member_cwd, requester, routes_of, Answerer, DecideError};
pub use desk::ApprovalDesk;
