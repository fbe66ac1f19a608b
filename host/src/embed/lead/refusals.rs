//! A lead's refused answers, counted this turn and over its life, against
//! `[lead] max_refused_answers_per_turn` and `max_refused_answers_total`:
//! past either, a refusal is no longer recorded as an escalation. Pure.

/// A lead's refused answers, this turn and over its life.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct RefusalCount {
    /// The turn `this_turn` counts.
    turn: u64,
    this_turn: u32,
    total: u32,
}

impl RefusalCount {
    /// A count going on from `total` refusals of an earlier life (a
    /// resumed lead); none this turn.
    pub(super) fn resumed(total: u32) -> RefusalCount {
        RefusalCount {
            total,
            ..RefusalCount::default()
        }
    }

    /// The refusals over the lead's life.
    pub(super) fn total(&self) -> u32 {
        self.total
    }

    /// `Ok` while a refusal in `turn` may still be recorded; else which
    /// limit it passed, with the manifest key that raises it.
    pub(super) fn quota(&self, turn: u64, per_turn: u32, total: u32) -> Result<(), String> {
        let this_turn = if self.turn == turn { self.this_turn } else { 0 };
        if self.total >= total {
            Err(format!(
                "the lead's answers were refused {} times in its life, its limit of recorded \
                 refusals ([lead] max_refused_answers_total = {total})",
                self.total
            ))
        } else if this_turn >= per_turn {
            Err(format!(
                "the lead's answers were refused {this_turn} times this turn, its limit of \
                 recorded refusals per turn ([lead] max_refused_answers_per_turn = {per_turn})"
            ))
        } else {
            Ok(())
        }
    }

    /// Counts one refusal in `turn`.
    pub(super) fn count(&mut self, turn: u64) {
        if self.turn != turn {
            self.turn = turn;
            self.this_turn = 0;
        }
        self.this_turn = self.this_turn.saturating_add(1);
        self.total = self.total.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_recorded_up_to_the_turns_limit_and_again_next_turn() {
        let mut r = RefusalCount::default();
        for _ in 0..2 {
            assert!(r.quota(1, 2, 10).is_ok());
            r.count(1);
        }
        let e = r.quota(1, 2, 10).unwrap_err();
        assert!(e.contains("[lead] max_refused_answers_per_turn = 2"), "{e}");
        // A new turn starts a new count; the life's goes on.
        assert!(r.quota(2, 2, 10).is_ok());
        r.count(2);
        assert_eq!((r.this_turn, r.total), (1, 3));
    }

    #[test]
    fn refusals_past_the_life_limit_are_not_recorded_in_any_turn() {
        let mut r = RefusalCount::default();
        for turn in 0..3 {
            assert!(r.quota(turn, 10, 3).is_ok());
            r.count(turn);
        }
        for turn in [3, 4] {
            let e = r.quota(turn, 10, 3).unwrap_err();
            assert!(e.contains("[lead] max_refused_answers_total = 3"), "{e}");
        }
    }
}
