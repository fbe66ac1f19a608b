//! Hostile tests: exhaustion.
