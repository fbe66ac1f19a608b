//! The team-wide cost budget (the manifest's `[model] team_budget_usd`):
//! one purse shared by every teammate and sub-agent of a team in this
//! host, next to each teammate's own budget ([`super::meter`]).
//!
//! It keeps the same rules as a teammate's meter: a call reserves its
//! worst-case cost first and starts only when what the whole team has left,
//! after the reservations of calls in flight, covers it; the reservation is
//! then replaced by what the call cost. It starts from what the team spent
//! before (its teammates' usage records, so a `--resume` counts earlier
//! lives). Teammates run by other processes (`teamhost teammate` panes)
//! count their own spending against what the records said when they
//! started: the purse is per host.

use std::sync::Mutex;

/// One team's purse.
#[derive(Debug)]
pub struct TeamBudget {
    budget: u64,
    state: Mutex<Purse>,
}

#[derive(Debug, Default)]
struct Purse {
    spent: u64,
    reserved: u64,
}

impl TeamBudget {
    /// A purse of `budget` microdollars, of which `spent_before` is gone.
    pub fn new(budget: u64, spent_before: u64) -> TeamBudget {
        TeamBudget {
            budget,
            state: Mutex::new(Purse {
                spent: spent_before,
                reserved: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Purse> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The budget, in microdollars.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// What the team spent, in microdollars.
    pub fn spent(&self) -> u64 {
        self.lock().spent
    }

    /// Holds `cost` for a call, or says why the team cannot afford it (the
    /// text for the guest and the lead, naming the key to raise).
    pub fn reserve(&self, cost: u64) -> Result<(), String> {
        let mut p = self.lock();
        let committed = p.spent.saturating_add(p.reserved);
        if committed.saturating_add(cost) > self.budget {
            let held = if p.reserved == 0 {
                String::new()
            } else {
                format!(" (plus {} held by calls in flight)", usd(p.reserved))
            };
            return Err(format!(
                "team cost budget exhausted: the team spent {} of {}{held}, and this call may cost up to {}; raise team_budget_usd under [model] in the manifest to allow more",
                usd(p.spent),
                usd(self.budget),
                usd(cost)
            ));
        }
        p.reserved = p.reserved.saturating_add(cost);
        Ok(())
    }

    /// Replaces a reservation of `reserved` by what the call cost.
    pub fn settle(&self, reserved: u64, cost: u64) {
        let mut p = self.lock();
        p.reserved = p.reserved.saturating_sub(reserved);
        p.spent = p.spent.saturating_add(cost);
    }

    /// Gives a reservation of `reserved` back.
    pub fn release(&self, reserved: u64) {
        let mut p = self.lock();
        p.reserved = p.reserved.saturating_sub(reserved);
    }
}

/// Microdollars as `$1.234567` (as the meter writes them).
fn usd(micro: u64) -> String {
    format!("${}.{:06}", micro / 1_000_000, micro % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purse_counts_earlier_spending_and_calls_in_flight() {
        let b = TeamBudget::new(10_000, 6_000);
        b.reserve(3_000).unwrap();
        let err = b.reserve(1_001).unwrap_err();
        assert!(
            err.contains("$0.006000 of $0.010000") && err.contains("team_budget_usd under [model]"),
            "{err}"
        );
        b.settle(3_000, 2_000);
        assert_eq!(b.spent(), 8_000);
        b.reserve(2_000).unwrap();
        b.release(2_000);
        assert!(b.reserve(2_001).is_err());
    }
}
