//! Every integration test of this crate in one binary: one link of
//! wasmtime instead of one per file. Each file below is a module; shared
//! helpers are declared once here. Run one file's tests with
//! `cargo test --test integration <module>::`.

mod common;
mod hostile;
mod sandbox_support;

mod active_mark;
mod agent_teammate;
mod approval_routing;
mod cache;
mod compaction;
mod compiling;
mod components;
mod failure;
mod hooks;
mod lead_agent;
mod lead_hostile;
mod lead_purse;
mod lead_seat;
mod live_model;
mod memory_store;
mod messaging;
mod model_broker;
mod model_budgets;
mod model_host;
mod model_providers;
mod notifications;
mod polyglot;
mod polyglot_examples;
mod priority;
mod prompt_caching;
mod reference_sequence;
mod reviewer;
mod sandbox_hostile;
mod sandbox_permissions;
mod sandbox_plan;
mod shutdown;
mod spawn_many;
mod starvation;
mod subagents;
mod subagents_lifecycle;
mod subagents_llm;
mod weak_model;
mod worktree;
