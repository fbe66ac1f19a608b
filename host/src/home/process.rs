//! Which process wrote a record: every record the home keeps of a host or
//! a teammate process names it by pid and start time (`/proc/{pid}/stat`
//! field 22, clock ticks since boot), so a recycled pid is never taken for
//! the process that wrote it.

use std::path::Path;

/// The start time of process `pid` (`/proc/{pid}/stat` field 22), when it
/// can be read: with the pid it names one process for good.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields
    // are counted after its last ')'. Field 3 is the first one after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether the host process named by `pid` and `start` still runs and is
/// not this process: what every record's `host_alive_elsewhere` asks.
pub(crate) fn runs_elsewhere(pid: u32, start: Option<u64>) -> bool {
    pid != std::process::id() && runs(pid, start)
}

/// Whether process `pid` runs and, when `start` is known, is the one that
/// started then.
pub(crate) fn runs(pid: u32, start: Option<u64>) -> bool {
    match (start, start_time(pid)) {
        (_, None) => false,
        (Some(want), Some(now)) => want == now,
        (None, Some(_)) => true,
    }
}
