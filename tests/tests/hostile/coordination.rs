//! Hostile tests: coordination.
