//! Hostile tests: rules.
