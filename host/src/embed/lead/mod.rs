//! A lead component in its team's lead seat: starting it
//! ([`Host::start_lead`](crate::embed::Host::start_lead)) and the seat its
//! `leading` calls reach ([`LeadSeat`]), which holds every act to the
//! grant ([`super::grant`]) and answers through the one approval path
//! ([`super::approvals`]).
//!
//! | file | what it owns |
//! |---|---|
//! | `start.rs` | `Host::start_lead`: the lead as its team's lead member, through the teammates' assembly and runner, with a seat |
//! | `seat.rs` | [`LeadSeat`]: spawn, answer, shut down, delete the team, list; its limits and refusal counts |

mod seat;
mod start;

pub use seat::LeadSeat;
