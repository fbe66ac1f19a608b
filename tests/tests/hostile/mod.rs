//! Round two of the hostile suite: one module per class of escape the
//! sandbox closes (docs/ARCHITECTURE.md, "Threat model"). Each module uses the
//! same arena as the tests above it: a real `hostile` component, a sentinel
//! tree outside every capability directory, an `echo` teammate that must
//! still answer afterwards.

mod bash_bounds;
mod bash_channels;
mod budgets;
mod coordination;
mod exhaustion;
mod host_paths;
mod key_fragments;
mod lead_purse;
mod lookalike_names;
mod posing_body;
mod privilege_bits;
mod resume_trust;
mod route_spelling;
mod rules;
mod seat_bounds;
mod special_files;
mod toolbox;
mod trusted_inputs;
mod unicode;
mod worktree_git;
