//! The process's allocator, for a process that holds thousands of
//! teammates: [`limit_malloc_arenas`].
//!
//! glibc's `malloc` gives a thread that finds its arena busy an arena of its
//! own, up to eight per core. A host's file work runs on tokio's blocking
//! pool (dozens of threads while teammates spawn), so a teammate's
//! long-lived parts are allocated from many arenas between the short-lived
//! buffers of spawning (configs of megabytes, inbox texts), and the free
//! space left between them stays with the process. At 10,000 idle `echo`
//! teammates that was 6 to 7 of the 54 KiB each one held; with one arena
//! per core it is gone, and spawning them on tmpfs took no longer (this
//! disk's runs were too noisy to tell either way; docs/PERFORMANCE.md,
//! "10,000 teammates: one malloc arena per core").
//! mimalloc, tried instead, held 190 to 215 KiB per teammate.

/// Limits glibc's `malloc` to one arena per core. Call it first thing in
/// `main`, before threads start (it changes only arenas made afterwards).
/// The `teamhost` binary does; a program embedding the host decides for
/// its own process (the same as `GLIBC_TUNABLES=glibc.malloc.arena_max=N`
/// in its environment). An `arena_max` the environment already sets there
/// wins: nothing is changed. Returns whether the limit was set: `false`
/// then, and on a C library other than glibc, where this does nothing.
pub fn limit_malloc_arenas() -> bool {
    if sets_arena_max(&std::env::var_os("GLIBC_TUNABLES").unwrap_or_default()) {
        return false;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets a tunable of the allocator; any
        // positive arena count is valid.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Whether a `GLIBC_TUNABLES` value sets the arena count
/// (`name=value` pairs separated by colons).
fn sets_arena_max(tunables: &std::ffi::OsStr) -> bool {
    tunables
        .to_string_lossy()
        .split(':')
        .any(|t| t.trim().starts_with("glibc.malloc.arena_max="))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_set_on_glibc_unless_the_environment_sets_one() {
        // glibc accepts the tunable (mallopt returns 1); elsewhere this is
        // a no-op that says so.
        let set_here = sets_arena_max(&std::env::var_os("GLIBC_TUNABLES").unwrap_or_default());
        assert_eq!(
            limit_malloc_arenas(),
            cfg!(all(target_os = "linux", target_env = "gnu")) && !set_here
        );
        let t = |s: &str| sets_arena_max(std::ffi::OsStr::new(s));
        assert!(t("glibc.malloc.arena_max=16"));
        assert!(t("glibc.malloc.trim_threshold=1:glibc.malloc.arena_max=4"));
        assert!(!t("glibc.malloc.trim_threshold=1"));
        assert!(!t(""));
    }
}
