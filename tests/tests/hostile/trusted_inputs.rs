//! Hostile tests: trusted_inputs.
