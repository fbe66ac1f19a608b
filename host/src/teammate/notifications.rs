//! [`NotificationLevel`]: which of a teammate's `idle_notification`s reach
//! the lead's inbox (the rest go to its history only). The runner applies
//! it ([`crate::runner::notify`] explains the levels); spawn requests,
//! manifests and flags carry it.

use std::fmt;
use std::str::FromStr;

use crate::protocol::{IdleNotification, IdleReason};

/// Which `idle_notification`s reach the lead's inbox (see the [runner
/// docs](crate::runner::notify)). The default, [`All`](NotificationLevel::All), is the
/// reference's behaviour.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum NotificationLevel {
    /// `all`: every idle notification, as the reference does.
    #[default]
    #[cfg_attr(feature = "cli", value(name = "all"))]
    All,
    /// `state-changes`: the first after start, completed tasks and failures.
    #[cfg_attr(feature = "cli", value(name = "state-changes"))]
    StateChanges,
    /// `none`: no idle notification; the history still records them.
    #[cfg_attr(feature = "cli", value(name = "none"))]
    None,
}

impl NotificationLevel {
    /// The accepted spellings, in order, for help and error texts.
    pub const NAMES: [&'static str; 3] = ["all", "state-changes", "none"];

    /// The spelling in manifests, flags and serde.
    pub const fn as_str(self) -> &'static str {
        match self {
            NotificationLevel::All => "all",
            NotificationLevel::StateChanges => "state-changes",
            NotificationLevel::None => "none",
        }
    }

    /// Whether `idle`, which a teammate's runner is about to send to the
    /// lead, goes into the lead's inbox (`true`) or only into its history
    /// (`false`). `first` says whether it is the teammate's first idle
    /// notification since it started.
    pub fn delivers(self, idle: &IdleNotification, first: bool) -> bool {
        match self {
            NotificationLevel::All => true,
            NotificationLevel::StateChanges => first || carries_news(idle),
            NotificationLevel::None => false,
        }
    }
}

/// Whether `idle` says more than "available": it reports a completed (or
/// blocked, or failed) task, or a failure.
fn carries_news(idle: &IdleNotification) -> bool {
    idle.completed_task_id.is_some()
        || idle.reason() == Some(IdleReason::Failed)
        || idle.failure_reason.is_some()
}

impl fmt::Display for NotificationLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for NotificationLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(NotificationLevel::All),
            "state-changes" => Ok(NotificationLevel::StateChanges),
            "none" => Ok(NotificationLevel::None),
            other => Err(format!(
                "unknown notification level {other:?}: use one of {}",
                NotificationLevel::NAMES.join(", ")
            )),
        }
    }
}

impl serde::Serialize for NotificationLevel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for NotificationLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
