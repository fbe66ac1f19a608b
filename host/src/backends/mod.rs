//! Where a teammate's runner lives. Only the in-process backend exists so far:
//! a tokio task inside the host process.

pub(crate) mod in_process;
