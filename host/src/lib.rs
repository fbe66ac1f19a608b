//! teamhost runs AI-agent teammates as WebAssembly components, on the same
//! on-disk protocol as Claude Code's agent teams.
//!
//! # Layout
//!
//! | module | owns |
//! |---|---|
//! | [`durable`] | whole-file writes that survive a crash (new file, sync, rename) and reads that move a corrupt file aside |
//! | [`home`] | the machine-local home: its layout, and what it keeps (turns, saved state, spawn records) |
//! | [`store`] | the team on disk: paths, names, locks, config, mailboxes, tasks |
//! | [`protocol`] | structured messages carried inside a mailbox `text` |
//! | [`sandbox`] | the permission engine: modes, tool rules, limits; (mode, rules, call) → allow / deny / ask |
//! | [`tools`] | the tool executors (Read, Write, Edit, Glob, Grep, Bash), confined to the capability directory |
//! | [`toolbox`] | the tools as a model sees them: definitions, parsing a model's call, results as text |
//! | [`model`] | model calls brokered for teammates: providers, credentials, policy, budgets, record/replay |
//! | [`network`] | the network by allowlist: host rules, the addresses refused unless named, the host's proxy (HTTP CONNECT, `http://`, SOCKS5) |
//! | [`runtime`] | wasmtime engine, component cache, linker, one file per WIT interface |
//! | [`runner`] | the per-teammate loop: handle → idle → poll → wake |
//! | [`teammate`] | what a teammate is to every layer: spawn request, states, events, model access |
//! | [`backends`] | where a runner lives: in-process, a child process, a tmux pane |
//! | [`embed`] | the embedding API: [`embed::Host`] (was `host`; renamed so it does not repeat the crate's name) |
//! | [`approvals`] | the lead's answers to permission and plan requests |
//! | [`status`] | a one-shot snapshot of a team, read from its files |
//! | [`worktree`] | per-teammate git worktrees |
//! | [`subagents`] | sub-agents (the `Agent` tool): at most the parent, lifecycle, definitions |
//! | [`hooks`] | the lead's hook commands: TeammateIdle, TaskCompleted, start and stop |
//! | [`manifest`] | `TEAM.toml`: a team, its component teammates and seed tasks, validated |
//! | [`run`] | running a manifest's team until its work is done: [`run::Run`]'s start, work, shutdown and finish |
//! | `cli` | the `teamhost` command line (feature `cli`, on by default) |
//! | [`error`] | the library's public error type |
//! | `blocking` | blocking work run off the async executor: the one helper, one wording for a panic |
//!
//! The store needs neither wasm nor tokio: the CLI and tests use it directly.
//!
//! # Features
//!
//! `cli` (default): the `teamhost` binary, its command line (`cli`) and the
//! live view (`view`), with clap, ratatui and tracing-subscriber. A program
//! that embeds the host through [`embed::Host`] builds without them:
//! `teamhost = { path = "…", default-features = false }`.

pub mod approvals;
pub mod backends;
pub(crate) mod blocking;
#[cfg(feature = "cli")]
pub mod cli;
pub mod durable;
pub mod embed;
pub mod error;
pub mod home;
pub mod hooks;
pub mod layout;
pub mod manifest;
pub mod model;
pub mod network;
pub mod protocol;
pub mod run;
pub mod runner;
pub mod runtime;
pub mod sandbox;
pub mod status;
pub mod store;
pub mod subagents;
pub mod teammate;
pub mod toolbox;
pub mod tools;
#[cfg(feature = "cli")]
pub mod view;
pub mod worktree;

pub use error::{Error, Result};

/// The Rust code of the embedding guide, compiled by `cargo test --doc` so the
/// guide cannot drift from the API. (Its shell blocks run in `scripts/doc-check`.)
#[cfg(doctest)]
#[doc = include_str!("../../docs/guides/embedding.md")]
pub struct GuideEmbedding;
