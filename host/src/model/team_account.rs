//! The team's cost account ([`TeamAccount`]): one budget for a whole team,
//! shared by every process that runs one of its members (the host, each
//! `teamhost teammate` process or pane, one Claude Code started, a
//! standby's), kept in the team store ([`AccountStore`]; the file store and
//! NATS keep it in the team's config, so every process of the team reads
//! the same one).
//!
//! **Claims, not counts.** A process does not write each call into the
//! account: it *claims* a slice of what is left ([`TeamAccount::take`]),
//! spends from its slice in memory ([`super::team_budget`]), and claims
//! again when a call needs more. What every holder claimed is never more
//! than the budget, so the team never spends more than its budget however
//! many processes call at once, and the account is written once per slice
//! (a fiftieth of the budget, or one call's worst case if more), not once
//! per call. A holder that ends hands back what it did not spend
//! ([`TeamAccount::settle`]); one that dies keeps its slice claimed: the
//! team loses at most that slice's unspent rest, never overspends.
//!
//! Pure: the store and the locking are the [`AccountStore`]'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The holder an account's first claim is written under: what the team's
/// members spent before the account existed (their usage records).
pub const EARLIER: &str = "earlier";

/// A team's cost budget and who has claimed how much of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamAccount {
    /// The team's cost budget over its life, in microdollars (the
    /// manifest's `[model] team_budget_usd`).
    pub budget_microdollars: u64,
    /// What each holder (a process, by [`holder_id`]) took from the
    /// budget: what it spent, plus what it still holds for calls it may
    /// make.
    #[serde(default)]
    pub claims: BTreeMap<String, u64>,
}

impl TeamAccount {
    /// A new account of `budget`, of which the team spent `earlier` before.
    pub fn new(budget: u64, earlier: u64) -> TeamAccount {
        let mut claims = BTreeMap::new();
        if earlier > 0 {
            claims.insert(EARLIER.to_string(), earlier);
        }
        TeamAccount {
            budget_microdollars: budget,
            claims,
        }
    }

    /// What every holder claimed.
    pub fn committed(&self) -> u64 {
        self.claims.values().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// What no holder claimed yet.
    pub fn left(&self) -> u64 {
        self.budget_microdollars.saturating_sub(self.committed())
    }

    /// What `holder` claimed.
    pub fn claimed_by(&self, holder: &str) -> u64 {
        self.claims.get(holder).copied().unwrap_or(0)
    }

    /// Claims for `holder` as much of `want` as is left, and at least
    /// `at_least`; returns what it took, or, when less than `at_least` is
    /// left, what is left (nothing taken).
    pub fn take(&mut self, holder: &str, want: u64, at_least: u64) -> Result<u64, u64> {
        let left = self.left();
        if left < at_least {
            return Err(left);
        }
        let took = want.max(at_least).min(left);
        let claim = self.claims.entry(holder.to_string()).or_insert(0);
        *claim = claim.saturating_add(took);
        Ok(took)
    }

    /// Brings `holder`'s claim down to `used` (what it spent and still
    /// holds for calls in flight), handing the rest back; never raises it.
    pub fn settle(&mut self, holder: &str, used: u64) {
        if let Some(claim) = self.claims.get_mut(holder) {
            *claim = used.min(*claim);
        }
    }
}

/// Where a team's account lives: read-modify-write under the store's lock
/// (or compare-and-swap).
pub trait AccountStore: Send + Sync + std::fmt::Debug {
    /// Runs `change` on the account and keeps what it made of it; returns
    /// the account as it now is. An error (the account missing or
    /// unreadable, the store failing) is a sentence for the teammate; a
    /// refusal inside `change` is `change`'s to report, and nothing is
    /// written then.
    fn update(
        &self,
        change: &mut dyn FnMut(&mut TeamAccount) -> bool,
    ) -> Result<TeamAccount, String>;
}

/// This process's name as an account holder: the machine and the process
/// (its pid and start time, which name it for good).
pub fn holder_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let pid = std::process::id();
    let started = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s.rsplit_once(')')?.1.to_string();
            after.split_whitespace().nth(19).map(str::to_string)
        })
        .unwrap_or_default();
    format!("{host}/{pid}/{started}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_never_add_up_to_more_than_the_budget() {
        let mut a = TeamAccount::new(100, 30);
        assert_eq!(a.left(), 70);
        assert_eq!(a.take("p1", 50, 10), Ok(50));
        // Less than wanted is left: what is left is taken.
        assert_eq!(a.take("p2", 50, 10), Ok(20));
        assert_eq!(a.left(), 0);
        // Nothing covers a call now; nothing is taken.
        assert_eq!(a.take("p2", 50, 1), Err(0));
        assert_eq!(a.committed(), 100);
        assert_eq!(a.claimed_by("p2"), 20);
    }

    #[test]
    fn a_settled_holder_hands_back_what_it_did_not_spend_and_never_gains() {
        let mut a = TeamAccount::new(100, 0);
        a.take("p1", 60, 1).unwrap();
        a.settle("p1", 25);
        assert_eq!((a.claimed_by("p1"), a.left()), (25, 75));
        a.settle("p1", 90);
        assert_eq!(a.claimed_by("p1"), 25, "a settle never raises a claim");
        a.settle("nobody", 10);
        assert_eq!(a.committed(), 25);
    }

    #[test]
    fn the_holder_names_this_machine_and_process() {
        let id = holder_id();
        assert!(id.contains(&format!("/{}/", std::process::id())), "{id}");
        assert_eq!(id, holder_id(), "the same process, the same holder");
    }
}
