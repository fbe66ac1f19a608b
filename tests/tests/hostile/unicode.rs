//! Hostile tests: unicode.
