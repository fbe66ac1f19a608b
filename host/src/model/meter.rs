//! One teammate's accounting: what it spent, what calls in flight may still
//! spend, and its limits (calls per turn, requests per minute, a token and
//! a cost budget).
//!
//! # Rules
//!
//! - **Reservation.** Before a call, its worst case is reserved: the input
//!   estimate (the request's JSON characters / 4) plus its `max_tokens`,
//!   and their cost at the model's price. A call starts only when what is
//!   left, after the reservations of calls still in flight, covers that;
//!   otherwise it is `budget-exhausted`, saying what was spent and what
//!   the limit is. After the call the reservation is replaced by the
//!   actual usage (or simply released when the call failed or was
//!   cancelled), so concurrent calls can never overspend by more than one
//!   estimate error.
//! - **Cost** is counted in integer microdollars from the alias's price
//!   ([`super::config::Price`]); an unpriced model costs 0.
//! - **Calls per turn** are counted when a call starts; at the limit the
//!   call is `denied` until the next turn ([`Meter::start_turn`]).
//! - **Requests per minute** is a token bucket holding a minute's worth
//!   (a burst of `requests_per_minute`, refilled continuously); an empty
//!   bucket answers `rate-limited` with the wait, at once: the host never
//!   sleeps on a guest's behalf. Answers served from a cassette are not
//!   rate limited.
//!
//! - **Budget given away.** A lead's meter is its purse: what its seat
//!   gives a teammate it spawns ([`Meter::give`]) is taken from the same
//!   cost budget its own calls (and its sub-agents') spend, so its calls
//!   and its gifts together never exceed it.
//! - **The team's budget.** A meter given the team's purse
//!   ([`super::team_budget`]) reserves and settles each call's cost there
//!   too: a call the whole team cannot afford is `budget-exhausted`.
//!
//! Each teammate has its own meter and its lock is held for a few
//! arithmetic steps, never across a provider call: teammates never wait on
//! each other here.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::config::Price;
use super::policy::ModelPolicy;
use super::team_budget::TeamBudget;
use super::types::{ModelError, Spend, Usage};

/// A teammate's meter.
#[derive(Debug)]
pub struct Meter {
    policy: ModelPolicy,
    team: Option<Arc<TeamBudget>>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    calls: u64,
    usage: Usage,
    cost: u64,
    reserved_tokens: u64,
    reserved_cost: u64,
    /// Cost budget given away (a lead's gifts to its teammates).
    given: u64,
    calls_this_turn: u32,
    estimated_calls: u64,
    bucket: f64,
    refilled: Instant,
    budget_notice: Notice,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Notice {
    None,
    Pending(String),
    Given,
}

/// What a started call holds until it is settled.
#[derive(Debug)]
#[must_use = "a reservation is settled or released"]
pub struct Reservation {
    tokens: u64,
    cost: u64,
}

impl Meter {
    /// A meter enforcing `policy`.
    pub fn new(policy: ModelPolicy) -> Meter {
        Meter::sharing(policy, None)
    }

    /// A meter enforcing `policy` and, when given, the team's budget.
    pub fn sharing(policy: ModelPolicy, team: Option<Arc<TeamBudget>>) -> Meter {
        let bucket = policy.requests_per_minute.map_or(0.0, f64::from);
        Meter {
            policy,
            team,
            state: Mutex::new(State {
                calls: 0,
                usage: Usage::default(),
                cost: 0,
                reserved_tokens: 0,
                reserved_cost: 0,
                given: 0,
                calls_this_turn: 0,
                estimated_calls: 0,
                bucket,
                refilled: Instant::now(),
                budget_notice: Notice::None,
            }),
        }
    }

    /// The policy it enforces.
    pub fn policy(&self) -> &ModelPolicy {
        &self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts a call whose worst case is `input_estimate + max_tokens`
    /// tokens at `price`; `rate_limited` is false for answers from a
    /// cassette.
    pub fn reserve(
        &self,
        input_estimate: u64,
        max_tokens: u32,
        price: Option<&Price>,
        rate_limited: bool,
    ) -> Result<Reservation, ModelError> {
        let mut s = self.lock();
        if let Some(limit) = self.policy.calls_per_turn {
            if s.calls_this_turn >= limit {
                return Err(ModelError::Denied(format!(
                    "this turn already made its {limit} model calls (calls_per_turn); end the turn: the count starts again at the next one"
                )));
            }
        }
        let tokens = input_estimate.saturating_add(u64::from(max_tokens));
        let cost = price.map_or(0, |p| {
            p.cost_microdollars(&Usage {
                input_tokens: input_estimate,
                output_tokens: u64::from(max_tokens),
                ..Usage::default()
            })
        });
        if let Some(budget) = self.policy.budget_tokens {
            let committed = s.usage.total().saturating_add(s.reserved_tokens);
            if committed.saturating_add(tokens) > budget {
                let text = format!(
                    "token budget exhausted: {} of {budget} tokens spent{}, and this call may need up to {tokens} (about {input_estimate} in, {max_tokens} out)",
                    s.usage.total(),
                    in_flight(s.reserved_tokens, "tokens"),
                );
                note(&mut s, &text);
                return Err(ModelError::BudgetExhausted(text));
            }
        }
        if let Some(budget) = self.policy.budget_microdollars {
            let committed = s
                .cost
                .saturating_add(s.reserved_cost)
                .saturating_add(s.given);
            if committed.saturating_add(cost) > budget {
                let given = match s.given {
                    0 => String::new(),
                    g => format!(", {} given to teammates", usd(g)),
                };
                let text = format!(
                    "cost budget exhausted: {} of {} spent{}{given}, and this call may cost up to {}; raise budget_usd in its model policy ([teammate.model_policy], or [lead.model_policy] for a lead, in the manifest) to allow more",
                    usd(s.cost),
                    usd(budget),
                    in_flight(s.reserved_cost, "µ$"),
                    usd(cost)
                );
                note(&mut s, &text);
                return Err(ModelError::BudgetExhausted(text));
            }
        }
        if let Some(team) = &self.team {
            if let Err(text) = team.reserve(cost) {
                note(&mut s, &text);
                return Err(ModelError::BudgetExhausted(text));
            }
        }
        if rate_limited {
            if let Some(rpm) = self.policy.requests_per_minute {
                let per_sec = f64::from(rpm) / 60.0;
                let now = Instant::now();
                let elapsed = now.duration_since(s.refilled).as_secs_f64();
                s.bucket = (s.bucket + elapsed * per_sec).min(f64::from(rpm));
                s.refilled = now;
                if s.bucket < 1.0 {
                    if let Some(team) = &self.team {
                        team.release(cost);
                    }
                    let wait = Duration::from_secs_f64((1.0 - s.bucket) / per_sec);
                    return Err(ModelError::RateLimited {
                        retry_after_ms: wait.as_millis().max(1) as u64,
                        message: format!("this teammate may make {rpm} model calls per minute (requests_per_minute)"),
                    });
                }
                s.bucket -= 1.0;
            }
        }
        s.calls_this_turn += 1;
        s.reserved_tokens = s.reserved_tokens.saturating_add(tokens);
        s.reserved_cost = s.reserved_cost.saturating_add(cost);
        Ok(Reservation { tokens, cost })
    }

    /// Replaces a reservation by what the call used.
    pub fn settle(&self, r: Reservation, usage: &Usage, price: Option<&Price>) {
        self.settle_as(r, usage, price, false);
    }

    /// [`Meter::settle`], where `estimated` says the usage is the host's
    /// estimate (the provider reported none); counted in
    /// [`Spend::estimated_calls`].
    pub fn settle_as(&self, r: Reservation, usage: &Usage, price: Option<&Price>, estimated: bool) {
        let mut s = self.lock();
        if estimated {
            s.estimated_calls += 1;
        }
        release(&mut s, &r);
        let cost = price.map_or(0, |p| p.cost_microdollars(usage));
        if let Some(team) = &self.team {
            team.settle(r.cost, cost);
        }
        s.calls += 1;
        s.usage.add(usage);
        s.cost = s.cost.saturating_add(cost);
    }

    /// Counts what an earlier life of the teammate spent (a resume): its
    /// budgets are for its whole life, not for each host that runs it.
    pub fn carry_over(&self, calls: u64, usage: &Usage, cost_microdollars: u64) {
        let mut s = self.lock();
        s.calls = s.calls.saturating_add(calls);
        s.usage.add(usage);
        s.cost = s.cost.saturating_add(cost_microdollars);
    }

    /// Gives a reservation back (the call failed or was cancelled).
    pub fn release(&self, r: Reservation) {
        release(&mut self.lock(), &r);
        if let Some(team) = &self.team {
            team.release(r.cost);
        }
    }

    /// Gives a reservation back as if it had never been made, its call not
    /// counted in this turn either: the broker took it to replay a call
    /// from a cassette and goes to the provider instead
    /// (`replay-or-record`), which reserves again.
    pub fn unreserve(&self, r: Reservation) {
        let mut s = self.lock();
        release(&mut s, &r);
        if let Some(team) = &self.team {
            team.release(r.cost);
        }
        s.calls_this_turn = s.calls_this_turn.saturating_sub(1);
    }

    /// Gives `amount` microdollars of the cost budget away (a lead's gift
    /// to a teammate it spawns): refused, saying what was spent, given and
    /// held, when the budget left after this meter's spending, its calls
    /// in flight and its earlier gifts does not cover it. Without a cost
    /// budget it is only counted.
    pub fn give(&self, amount: u64) -> Result<(), String> {
        let mut s = self.lock();
        if let Some(budget) = self.policy.budget_microdollars {
            let committed = s
                .cost
                .saturating_add(s.reserved_cost)
                .saturating_add(s.given);
            if committed.saturating_add(amount) > budget {
                return Err(format!(
                    "budget {} is more than the lead has left to give: at most {} (of its {}, it spent {} on its own model calls{}, gave {})",
                    usd(amount),
                    usd(budget.saturating_sub(committed)),
                    usd(budget),
                    usd(s.cost),
                    in_flight(s.reserved_cost, "µ$"),
                    usd(s.given)
                ));
            }
        }
        s.given = s.given.saturating_add(amount);
        Ok(())
    }

    /// Takes back a gift of `amount` (the spawn it was for failed).
    pub fn give_back(&self, amount: u64) {
        let mut s = self.lock();
        s.given = s.given.saturating_sub(amount);
    }

    /// Counts gifts an earlier life made (a resumed lead), unchecked: they
    /// were within the budget when made.
    pub fn carry_over_given(&self, amount: u64) {
        let mut s = self.lock();
        s.given = s.given.saturating_add(amount);
    }

    /// What is left of the cost budget after what was spent, what calls in
    /// flight hold and what was given; `None` without a cost budget.
    pub fn cost_left_to_give(&self) -> Option<u64> {
        let s = self.lock();
        self.policy.budget_microdollars.map(|b| {
            b.saturating_sub(s.cost)
                .saturating_sub(s.reserved_cost)
                .saturating_sub(s.given)
        })
    }

    /// A new turn: calls per turn start again.
    pub fn start_turn(&self) {
        self.lock().calls_this_turn = 0;
    }

    /// What was spent and what is left.
    pub fn spend(&self) -> Spend {
        let s = self.lock();
        Spend {
            calls: s.calls,
            usage: s.usage,
            cost_microdollars: s.cost,
            tokens_left: self
                .policy
                .budget_tokens
                .map(|b| b.saturating_sub(s.usage.total())),
            cost_left_microdollars: self
                .policy
                .budget_microdollars
                .map(|b| b.saturating_sub(s.cost).saturating_sub(s.given)),
            calls_left_this_turn: self
                .policy
                .calls_per_turn
                .map(|c| c.saturating_sub(s.calls_this_turn)),
            estimated_calls: s.estimated_calls,
            budget_microdollars: self.policy.budget_microdollars,
            team_spent_microdollars: self.team.as_ref().map(|t| t.spent()),
            team_budget_microdollars: self.team.as_ref().map(|t| t.budget()),
            given_microdollars: s.given,
        }
    }

    /// The text for the lead, the first time a budget refused a call; then
    /// `None` for ever.
    pub fn take_budget_notice(&self) -> Option<String> {
        let mut s = self.lock();
        match std::mem::replace(&mut s.budget_notice, Notice::Given) {
            Notice::Pending(text) => Some(text),
            Notice::None => {
                s.budget_notice = Notice::None;
                None
            }
            Notice::Given => None,
        }
    }
}

fn release(s: &mut State, r: &Reservation) {
    s.reserved_tokens = s.reserved_tokens.saturating_sub(r.tokens);
    s.reserved_cost = s.reserved_cost.saturating_sub(r.cost);
}

fn note(s: &mut State, text: &str) {
    if s.budget_notice == Notice::None {
        s.budget_notice = Notice::Pending(format!("model {text}"));
    }
}

fn in_flight(reserved: u64, unit: &str) -> String {
    if reserved == 0 {
        String::new()
    } else {
        format!(" (plus {reserved} {unit} held by calls in flight)")
    }
}

/// Microdollars as `$1.234567`.
pub fn usd(micro: u64) -> String {
    format!("${}.{:06}", micro / 1_000_000, micro % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ModelPolicy {
        let mut p = ModelPolicy::new(vec!["m".into()]);
        p.requests_per_minute = None;
        p
    }

    #[test]
    fn a_token_budget_counts_reservations_in_flight_and_notices_once() {
        let mut p = policy();
        p.budget_tokens = Some(1_000);
        let m = Meter::new(p);
        let first = m.reserve(100, 400, None, true).unwrap();
        // 500 held; another 500 fits, a third does not.
        let second = m.reserve(100, 400, None, true).unwrap();
        let err = m.reserve(1, 1, None, true).unwrap_err();
        assert!(
            matches!(err, ModelError::BudgetExhausted(ref t) if t.contains("held by calls in flight")),
            "{err}"
        );
        m.settle(
            first,
            &Usage {
                input_tokens: 90,
                output_tokens: 10,
                ..Usage::default()
            },
            None,
        );
        m.release(second);
        assert_eq!(m.spend().tokens_left, Some(900));
        assert!(m
            .take_budget_notice()
            .unwrap()
            .contains("token budget exhausted"));
        assert_eq!(m.take_budget_notice(), None);
    }

    #[test]
    fn an_earlier_lifes_spending_counts_against_the_budget() {
        let mut p = policy();
        p.budget_tokens = Some(1_000);
        let m = Meter::new(p);
        let earlier = Usage {
            input_tokens: 700,
            output_tokens: 200,
            ..Usage::default()
        };
        m.carry_over(3, &earlier, 0);
        assert_eq!(m.spend().calls, 3);
        assert_eq!(m.spend().tokens_left, Some(100));
        assert!(matches!(
            m.reserve(50, 100, None, true),
            Err(ModelError::BudgetExhausted(_))
        ));
        let r = m.reserve(50, 50, None, true).unwrap();
        m.release(r);
    }

    #[test]
    fn a_cost_budget_is_charged_at_the_price() {
        let mut p = policy();
        p.budget_microdollars = Some(10_000);
        let price = Price {
            input: 3.0,
            output: 15.0,
            cache_read: None,
            cache_write: None,
        };
        let m = Meter::new(p);
        let r = m.reserve(1_000, 100, Some(&price), true).unwrap(); // 3000 + 1500 µ$
        m.settle(
            r,
            &Usage {
                input_tokens: 1_000,
                output_tokens: 100,
                ..Usage::default()
            },
            Some(&price),
        );
        assert_eq!(m.spend().cost_microdollars, 4_500);
        let r = m.reserve(1_000, 100, Some(&price), true).unwrap();
        m.settle(
            r,
            &Usage {
                input_tokens: 1_000,
                output_tokens: 100,
                ..Usage::default()
            },
            Some(&price),
        );
        let err = m.reserve(1_000, 100, Some(&price), true).unwrap_err();
        assert!(err.to_string().contains("$0.009000 of $0.010000"), "{err}");
    }

    #[test]
    fn calls_per_turn_are_denied_until_the_next_turn() {
        let mut p = policy();
        p.calls_per_turn = Some(2);
        let m = Meter::new(p);
        for _ in 0..2 {
            let r = m.reserve(1, 1, None, true).unwrap();
            m.release(r);
        }
        assert!(matches!(
            m.reserve(1, 1, None, true),
            Err(ModelError::Denied(_))
        ));
        assert_eq!(m.spend().calls_left_this_turn, Some(0));
        m.start_turn();
        assert!(m.reserve(1, 1, None, true).is_ok());
    }

    #[test]
    fn the_rate_limit_answers_with_the_wait_instead_of_sleeping() {
        let mut p = policy();
        p.requests_per_minute = Some(2);
        let m = Meter::new(p);
        for _ in 0..2 {
            let r = m.reserve(1, 1, None, true).unwrap();
            m.release(r);
        }
        match m.reserve(1, 1, None, true) {
            Err(ModelError::RateLimited { retry_after_ms, .. }) => {
                assert!(
                    retry_after_ms > 0 && retry_after_ms <= 30_000,
                    "{retry_after_ms}"
                )
            }
            other => panic!("expected rate-limited, got {other:?}"),
        }
        // A cassette answer is not rate limited.
        assert!(m.reserve(1, 1, None, false).is_ok());
    }
}
