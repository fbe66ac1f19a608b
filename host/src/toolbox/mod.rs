//! The toolbox: a teammate's tools as a language model sees them
//! (`teamhost:agent/toolbox`).
//!
//! [`crate::tools`] runs Read, Write, Edit, Glob, Grep and Bash in the
//! teammate's directory; the WIT glue decides each call in the sandbox. This
//! module sits in front of both for an agent loop: it describes the tools
//! with the input fields of Claude Code's own tools, so a model trained on
//! them needs no new words ([`definitions`]), reads the JSON a model wrote
//! into a typed call with errors a model can act on ([`input`]), and writes
//! results in the shapes Claude Code gives a model ([`format`]). Running a
//! call is the glue's job (`runtime/interfaces/toolbox.rs`): it calls the
//! same `tools`, `messaging` and `tasks` functions a component calls
//! directly, so there is one sandbox, one approval path and one set of
//! limits.
//!
//! Nothing here touches wasm, files or the team: it is plain functions over
//! JSON and text, tested on their own.

pub mod agent_format;
pub mod definitions;
pub mod format;
pub mod input;
pub mod lead_tools;

pub use definitions::{definition, ToolSpec, TOOLS};
pub use input::{parse, Call};
