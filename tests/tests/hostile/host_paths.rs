//! Hostile tests: host_paths.
