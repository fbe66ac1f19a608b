//! A lead component in its team's lead seat: starting it
//! ([`Host::start_lead`](crate::embed::Host::start_lead)) and the seat its
//! `leading` calls reach ([`LeadSeat`]), which holds every act to the
//! grant ([`super::grant`]) and answers through the one approval path
//! ([`super::approvals`]).
//!
//! | file | what it owns |
//! |---|---|
//! | `start.rs` | `Host::start_lead`: the lead as its team's lead member, through the teammates' assembly and runner, with a seat |
//! | `resume.rs` | `Host::resume_led`: a led team brought back after its host died, the lead with its seat as it was kept |
//! | `record.rs` | keeping the seat on this machine after each change (`home::lead_record`), what a resume goes on from, and in the lead's run record on a shared store |
//! | `shared.rs` | the lead's run record on a store shared by several hosts, and `Host::adopt_lead`: a standby takes the lead over with its seat |
//! | `seat.rs` | [`LeadSeat`]: its state, what every act shares (the bounds on its texts, its team, its catalogue) and the `LeadHost` calls, each handed to the file below |
//! | `spawns.rs` | spawning a teammate from the catalogue, granted by [`LeadGrant::may_spawn`](crate::embed::LeadGrant::may_spawn), within its limits |
//! | `answers.rs` | answering permission and plan requests: which it may answer, the entry's bound, the one approval path |
//! | `refusals.rs` | its refused answers counted this turn and over its life (pure) |
//! | `team_life.rs` | forming the team, asking a teammate to shut down, deleting the team |
//! | `views.rs` | what it reads: its catalogue, the requests waiting, its teammates |

mod answers;
mod record;
mod refusals;
mod resume;
mod seat;
mod shared;
mod spawns;
mod start;
mod team_life;
mod views;

pub use seat::LeadSeat;
