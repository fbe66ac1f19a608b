//! The team-wide cost budget (the manifest's `[model] team_budget_usd`):
//! one purse per team in this process, shared by every teammate and
//! sub-agent of the team that calls from here, next to each teammate's own
//! budget ([`super::meter`]).
//!
//! It keeps the same rules as a teammate's meter: a call reserves its
//! worst-case cost first and starts only when what is left, after the
//! reservations of calls in flight, covers it; the reservation is then
//! replaced by what the call cost.
//!
//! **One account across processes.** A purse opened on the team's account
//! ([`TeamBudget::on_account`], [`super::team_account`]) spends from the
//! slices this process claimed there: a call that its slice cannot cover
//! claims another (a store write), and is refused when the team's account
//! has nothing left for it, whichever processes spent it. So every process
//! of the team (the host, its `teamhost teammate` panes, one a Claude Code
//! lead started) keeps one budget, and the team never spends more than it.
//! [`TeamBudget::settle_account`] hands back what this process claimed and
//! did not spend. A purse without an account ([`TeamBudget::new`]) counts
//! only this process's calls, from what the team spent before.
//!
//! A claim is one store write (the config's read-modify-write) made on the
//! calling thread, under this purse's lock: this process's calls of the
//! team wait for it, once per slice, not once per call. On a NATS store
//! that does not answer, the call waits as every store call does (at most
//! the store's retry time), then is refused.

use std::sync::{Arc, Mutex};

use super::team_account::{AccountStore, TeamAccount};

/// The slices a purse claims: a fiftieth of the budget (or one call's
/// worst case, if more).
const SLICES: u64 = 50;

/// One team's purse.
#[derive(Debug)]
pub struct TeamBudget {
    budget: u64,
    state: Mutex<Purse>,
    account: Option<Account>,
}

/// The account a purse spends from, and who it is there.
#[derive(Debug)]
struct Account {
    store: Arc<dyn AccountStore>,
    holder: String,
}

#[derive(Debug, Default)]
struct Purse {
    /// Spent by this process's calls (and, without an account, before).
    spent: u64,
    reserved: u64,
    /// What this process claimed from the account (with one).
    claimed: u64,
    /// What the other holders claimed, as of the last look.
    others: u64,
}

impl TeamBudget {
    /// A purse of `budget` microdollars, of which `spent_before` is gone,
    /// counting only this process's calls.
    pub fn new(budget: u64, spent_before: u64) -> TeamBudget {
        TeamBudget {
            budget,
            state: Mutex::new(Purse {
                spent: spent_before,
                ..Purse::default()
            }),
            account: None,
        }
    }

    /// A purse spending from the team's account in `store` as `holder`
    /// (see the module docs), `account` as it was just read.
    pub fn on_account(
        account: &TeamAccount,
        store: Arc<dyn AccountStore>,
        holder: String,
    ) -> TeamBudget {
        TeamBudget {
            budget: account.budget_microdollars,
            state: Mutex::new(Purse {
                claimed: account.claimed_by(&holder),
                others: account
                    .committed()
                    .saturating_sub(account.claimed_by(&holder)),
                ..Purse::default()
            }),
            account: Some(Account { store, holder }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Purse> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The budget, in microdollars.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// What the team spent, in microdollars: with an account, what the
    /// other processes claimed (as of the last look) and what this one
    /// spent.
    pub fn spent(&self) -> u64 {
        let p = self.lock();
        p.others.saturating_add(p.spent)
    }

    /// Holds `cost` for a call, or says why the team cannot afford it (the
    /// text for the guest and the lead, naming the key to raise).
    pub fn reserve(&self, cost: u64) -> Result<(), String> {
        let mut p = self.lock();
        let committed = p.spent.saturating_add(p.reserved);
        match &self.account {
            None => {
                if committed.saturating_add(cost) > self.budget {
                    return Err(exhausted(p.spent, p.reserved, self.budget, cost));
                }
            }
            Some(account) => {
                let need = committed.saturating_add(cost);
                if need > p.claimed {
                    // Claimed under this purse's lock: this process's
                    // other calls wait for the one store write.
                    let short = need - p.claimed;
                    self.claim(account, &mut p, short, cost)?;
                }
            }
        }
        p.reserved = p.reserved.saturating_add(cost);
        Ok(())
    }

    /// Claims at least `short` more from the account (a slice, if more),
    /// or says the team has nothing left for a call of `cost`.
    fn claim(&self, account: &Account, p: &mut Purse, short: u64, cost: u64) -> Result<(), String> {
        let slice = (self.budget / SLICES).max(short);
        let mut took = None;
        let now = account
            .store
            .update(&mut |a| match a.take(&account.holder, slice, short) {
                Ok(t) => {
                    took = Some(t);
                    true
                }
                Err(_) => false,
            })
            .map_err(|e| {
                format!("the team's cost account cannot be used ({e}); the call is refused")
            })?;
        p.others = now
            .committed()
            .saturating_sub(now.claimed_by(&account.holder));
        match took {
            Some(t) => {
                p.claimed = p.claimed.saturating_add(t);
                Ok(())
            }
            None => Err(exhausted(
                p.others.saturating_add(p.spent),
                p.reserved,
                now.budget_microdollars,
                cost,
            )),
        }
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

    /// Hands back to the team's account what this process claimed beyond
    /// what it spent and holds for calls in flight (a teammate of this
    /// process ended: what is left is the team's again). Nothing without an
    /// account; a store that fails is logged (the slice stays claimed: the
    /// team loses it, never overspends).
    pub fn settle_account(&self) {
        let Some(account) = &self.account else {
            return;
        };
        let mut p = self.lock();
        let used = p.spent.saturating_add(p.reserved);
        if used >= p.claimed {
            return;
        }
        match account.store.update(&mut |a| {
            a.settle(&account.holder, used);
            true
        }) {
            Ok(now) => {
                p.claimed = now.claimed_by(&account.holder);
                p.others = now.committed().saturating_sub(p.claimed);
            }
            Err(e) => {
                tracing::warn!(error = %e, "the unspent rest of a team budget slice was not handed back")
            }
        }
    }
}

/// The refusal of a call of `cost` when `spent` (plus `reserved` in flight)
/// of `budget` is gone.
fn exhausted(spent: u64, reserved: u64, budget: u64, cost: u64) -> String {
    let held = if reserved == 0 {
        String::new()
    } else {
        format!(" (plus {} held by calls in flight)", usd(reserved))
    };
    format!(
        "team cost budget exhausted: the team spent {} of {}{held}, and this call may cost up to {}; raise team_budget_usd under [model] in the manifest to allow more",
        usd(spent),
        usd(budget),
        usd(cost)
    )
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

    /// An account in memory, as two processes' stores would share it.
    #[derive(Debug, Default)]
    struct Shared {
        account: Mutex<Option<TeamAccount>>,
        writes: std::sync::atomic::AtomicUsize,
    }

    impl AccountStore for Shared {
        fn update(
            &self,
            change: &mut dyn FnMut(&mut TeamAccount) -> bool,
        ) -> Result<TeamAccount, String> {
            let mut slot = self.account.lock().unwrap();
            let mut a = slot.clone().ok_or("no account")?;
            if change(&mut a) {
                self.writes
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                *slot = Some(a.clone());
            }
            Ok(a)
        }
    }

    #[test]
    fn two_processes_on_one_account_never_spend_more_than_the_budget() {
        let store = Arc::new(Shared::default());
        *store.account.lock().unwrap() = Some(TeamAccount::new(1_000_000, 100_000));
        let account = store.account.lock().unwrap().clone().unwrap();
        let purse = |who: &str| TeamBudget::on_account(&account, store.clone(), who.into());
        let (a, b) = (purse("a"), purse("b"));
        // Each call may cost 0.3 and costs 0.3: three fit in what is left
        // (0.9), whoever makes them.
        let mut calls = 0;
        for p in [&a, &b, &a, &b, &a, &b] {
            if p.reserve(300_000).is_ok() {
                p.settle(300_000, 300_000);
                calls += 1;
            }
        }
        assert_eq!(calls, 3);
        let err = b.reserve(300_000).unwrap_err();
        assert!(err.starts_with("team cost budget exhausted"), "{err}");
        let now = store.account.lock().unwrap().clone().unwrap();
        assert_eq!(now.committed(), 1_000_000, "{now:?}");
        assert_eq!(now.claimed_by("a") + now.claimed_by("b"), 900_000);
        assert_eq!(a.spent(), 1_000_000, "a sees b's claims and its own calls");
    }

    #[test]
    fn small_calls_claim_slices_not_one_write_each_and_the_rest_goes_back() {
        let store = Arc::new(Shared::default());
        *store.account.lock().unwrap() = Some(TeamAccount::new(1_000_000, 0));
        let account = store.account.lock().unwrap().clone().unwrap();
        let p = TeamBudget::on_account(&account, store.clone(), "a".into());
        for _ in 0..100 {
            p.reserve(1_000).unwrap();
            p.settle(1_000, 1_000);
        }
        // 100 calls of 0.001 within slices of 0.02: five claims.
        assert_eq!(store.writes.load(std::sync::atomic::Ordering::SeqCst), 5);
        p.settle_account();
        let now = store.account.lock().unwrap().clone().unwrap();
        assert_eq!(now.claimed_by("a"), 100_000, "the unspent rest went back");
        assert_eq!(p.spent(), 100_000);
    }

    #[test]
    fn an_account_that_cannot_be_read_refuses_the_call() {
        let store = Arc::new(Shared::default());
        let p = TeamBudget::on_account(&TeamAccount::new(1_000, 0), store, "a".into());
        let err = p.reserve(10).unwrap_err();
        assert!(err.contains("cannot be used (no account)"), "{err}");
    }
}
