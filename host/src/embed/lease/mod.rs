//! The leases of host failover: one host's claim on the teammates it runs in
//! a team, kept in a store shared by several hosts, and the table of the
//! leases one host holds, which its store asks before every write.
//!
//! | file | what it owns |
//! |---|---|
//! | `record.rs` | [`TeamLease`]: take, renew, release, and the fence of a lease taken over; [`HostIdentity`] |
//! | `table.rs` | `HostLeases`: the leases one [`Host`](crate::embed::Host) holds, one per team, and the [`Fence`](crate::store::Fence) its store asks |

mod record;
pub(in crate::embed) mod table;

pub use record::*;
