//! [`HostOptions`]: a [`Host`](super::Host)'s settings and their defaults.

use std::path::PathBuf;
use std::time::Duration;

use crate::backends::BackendOptions;
use crate::runner::NotificationLevel;

/// Settings of a [`Host`](super::Host). `HostOptions::default()`: artifacts cached under
/// `{home}/cache/components`, guest logs under `{home}/logs/{team}/{name}.log`,
/// fallback poll every 500 ms (the reference's interval), events buffered 1,024
/// deep, teammates in-process ([`BackendOptions::default`]), writes by other
/// processes watched through the store's change feed, every idle notification
/// delivered to the lead ([`NotificationLevel::All`]).
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// Where precompiled components are kept (`None`: `{home}/cache/components`).
    pub cache_dir: Option<PathBuf>,
    /// Where guest stdout/stderr go (`None`: `{home}/logs`).
    pub log_dir: Option<PathBuf>,
    /// Fallback poll for writes by other processes: how often an idle
    /// teammate looks for work unasked when `watch_files` is off (the
    /// reference's 500 ms); with it on, the change feed wakes teammates and
    /// they poll ten times less often, in case an event was lost, and less
    /// often still in a host of more than 250 teammates: their polls are
    /// spread so that the host makes at most 50 a second, each teammate
    /// polling at least once a minute (at 2,000 teammates each polls every
    /// 20 to 60 s, at 10,000 every 30 to 90 s). Both feeds hear every
    /// write (the file store's reports everything again when its queue
    /// overflows, NATS's after a reconnect), so the fallback is a second
    /// line, not the way writes are heard.
    pub poll_interval: Duration,
    /// Capacity of the event channel.
    pub event_capacity: usize,
    /// Approve every submitted plan at once, as the reference does. Off by
    /// default: a plan waits for the lead.
    pub auto_approve_plans: bool,
    /// Where teammates run (in-process, child processes, tmux panes).
    pub backends: BackendOptions,
    /// Wake teammates on writes by other processes through the store's
    /// change feed (inotify on the file store, the server's notices on a
    /// NATS store) instead of only the fallback poll. Default on.
    pub watch_files: bool,
    /// The lead's hook commands (none by default).
    pub hooks: std::sync::Arc<crate::hooks::Hooks>,
    /// Which of the teammates' `idle_notification`s reach the lead's inbox:
    /// `all` (the default, the reference's behaviour), `state-changes` (the
    /// first after start, completed tasks and failures) or `none`. The others
    /// are appended to the lead's history only; every other message is always
    /// delivered. See [`crate::runner::notify`]. [`Host::spawn`](super::Host::spawn) gives it to
    /// each teammate whose [`TeammateSettings::notifications`](crate::teammate::TeammateSettings::notifications) is `None`; the
    /// process and tmux backends pass it on as `teamhost teammate
    /// --notifications`.
    pub notifications: NotificationLevel,
    /// The model broker teammates' `model.complete` calls go through
    /// (providers, credentials, aliases, record/replay). Default: none
    /// configured, so every call is `denied`.
    pub models: super::ModelAccess,
    /// Host leases (host failover): `Some(length)` makes this host take a lease
    /// on each team it spawns into on a store with failover (NATS), renewed
    /// every `length / 3`, and fences its store with it (see
    /// `embed/failover/host_lease.rs`). `None` (the default): no lease, no fence.
    /// `teamhost run` sets `Some(--lease)` on a store with failover.
    pub lease: Option<Duration>,
    /// Who this host is in leases and run records. `None` (the default):
    /// [`HostIdentity::this_process`](super::lease::HostIdentity::this_process).
    /// Set it only to play several hosts in one process (tests).
    pub identity: Option<super::lease::HostIdentity>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            cache_dir: None,
            log_dir: None,
            poll_interval: Duration::from_millis(500),
            event_capacity: 1024,
            auto_approve_plans: false,
            backends: BackendOptions::default(),
            watch_files: true,
            hooks: Default::default(),
            notifications: NotificationLevel::All,
            models: super::ModelAccess::default(),
            lease: None,
            identity: None,
        }
    }
}
