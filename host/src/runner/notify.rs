//! Notification levels: which of a teammate's `idle_notification`s reach the
//! lead's inbox.
//!
//! The reference sends the lead an `idle_notification` after every turn of
//! every teammate, and each one lands in the lead's model-facing inbox: a busy
//! team floods it. A [`NotificationLevel`] filters **only the idle
//! notifications the runner sends to the lead**; every other message (plain
//! text, permission and plan requests, shutdown answers, task reports, hook
//! failures, host notices) is always delivered.
//!
//! | level | idle notifications put in the lead's inbox |
//! |---|---|
//! | `all` (default) | every one, as the reference does |
//! | `state-changes` | only those that carry news: the teammate's first since it started, one with `completedTaskId`, one reporting a failure (`idleReason: "failed"` or a `failureReason`) |
//! | `none` | none |
//!
//! Nothing is lost: a notification kept out of the inbox is appended to the
//! lead's history (`teams/{team}/history/{lead}.jsonl`, through
//! [`Team::record_in_history`](crate::store::Team::record_in_history)) as if
//! the lead had read it at once, so `teamhost inbox --history`,
//! [`Team::history`](crate::store::Team::history) and `teamhost status` still
//! show it. It does not wake the lead: nothing new is in its inbox.
//!
//! The level is spelled `all`, `state-changes` or `none` everywhere: in a
//! manifest (`[team] notifications`), on the command line
//! (`teamhost teammate --notifications`, `$TEAMHOST_NOTIFICATIONS`) and in
//! serde. It is set by
//! [`HostOptions::notifications`](crate::teammate::HostOptions::notifications)
//! or per teammate by
//! [`SpawnRequest::notifications`](crate::teammate::SpawnRequest::notifications).

pub use crate::teammate::NotificationLevel;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{CompletedStatus, IdleNotification, IdleReason};
    use NotificationLevel as L;

    fn available() -> IdleNotification {
        IdleNotification::new("w", IdleReason::Available)
    }

    /// One idle notification of each kind the runner sends, with whether
    /// `state-changes` delivers it when it is not the first.
    fn cases() -> Vec<(&'static str, IdleNotification, bool)> {
        vec![
            ("available", available(), false),
            (
                "available after a peer DM",
                available().with_summary(IdleNotification::peer_dm_summary("bob", "hi")),
                false,
            ),
            (
                "task resolved",
                available().with_completed_task("3", CompletedStatus::Resolved),
                true,
            ),
            (
                "task blocked with a reason",
                available()
                    .with_completed_task("3", CompletedStatus::Blocked)
                    .with_failure_reason("waiting"),
                true,
            ),
            (
                "turn failed",
                IdleNotification::new("w", IdleReason::Failed).with_failure_reason("boom"),
                true,
            ),
            (
                "failed without a reason",
                IdleNotification::new("w", IdleReason::Failed),
                true,
            ),
            (
                "a failure reason alone",
                available().with_failure_reason("tool denied"),
                true,
            ),
        ]
    }

    #[test]
    fn all_delivers_every_idle_notification() {
        for (what, idle, _) in cases() {
            for first in [true, false] {
                assert!(L::All.delivers(&idle, first), "{what}, first={first}");
            }
        }
    }

    #[test]
    fn none_delivers_no_idle_notification_not_even_the_first_or_a_failure() {
        for (what, idle, _) in cases() {
            for first in [true, false] {
                assert!(!L::None.delivers(&idle, first), "{what}, first={first}");
            }
        }
    }

    #[test]
    fn state_changes_delivers_the_first_and_the_ones_with_news_only() {
        for (what, idle, news) in cases() {
            assert!(L::StateChanges.delivers(&idle, true), "{what} as the first");
            assert_eq!(
                L::StateChanges.delivers(&idle, false),
                news,
                "{what}, not the first"
            );
        }
    }

    #[test]
    fn the_default_is_all() {
        assert_eq!(L::default(), L::All);
    }

    #[test]
    fn spellings_round_trip_through_from_str_display_and_serde() {
        for (level, name) in [L::All, L::StateChanges, L::None].into_iter().zip(L::NAMES) {
            assert_eq!(level.as_str(), name);
            assert_eq!(level.to_string(), name);
            assert_eq!(name.parse::<L>(), Ok(level));
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<L>(&json).unwrap(), level);
        }
    }

    /// The flags' spellings (clap, behind the `cli` feature) are the same.
    #[cfg(feature = "cli")]
    #[test]
    fn clap_spells_the_levels_the_same() {
        use clap::ValueEnum;
        for (level, name) in [L::All, L::StateChanges, L::None].into_iter().zip(L::NAMES) {
            let possible = level.to_possible_value().unwrap();
            assert_eq!(possible.get_name(), name);
        }
        assert_eq!(L::value_variants().len(), L::NAMES.len());
    }

    #[test]
    fn a_bad_spelling_is_refused_listing_the_three() {
        for bad in ["loud", "All", "state_changes", ""] {
            let err = bad.parse::<L>().unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
            assert!(err.contains("all, state-changes, none"), "{err}");
            let serde_err = serde_json::from_str::<L>(&format!("\"{bad}\""))
                .unwrap_err()
                .to_string();
            assert!(
                serde_err.contains("all, state-changes, none"),
                "{serde_err}"
            );
        }
    }
}
