//! [`ModelAccess`]: the host's model broker as [`HostOptions`](super::HostOptions)
//! holds it, with what a `teamhost teammate` child needs to build the same
//! broker, and the paths no teammate's directory may contain.

use std::path::PathBuf;
use std::sync::Arc;

use crate::layout::{Kind, Protected};
use crate::model::ModelHub;

/// The model broker of a host. The default has nothing configured: every
/// teammate's `model.complete` is `denied`.
#[derive(Clone)]
pub struct ModelAccess {
    hub: Arc<ModelHub>,
    child_args: Vec<String>,
    protected: Vec<Protected>,
}

impl ModelAccess {
    /// Wraps a broker.
    pub fn new(hub: Arc<ModelHub>) -> Self {
        ModelAccess {
            hub,
            child_args: Vec::new(),
            protected: Vec::new(),
        }
    }

    /// Adds the `teamhost teammate` flags that rebuild this broker in a child
    /// process (`--model-mode`, `--model-config`, `--cassettes`). Credentials
    /// are never among them: a child reads them from the environment it
    /// inherits, as this process did.
    pub fn with_child_args(mut self, args: Vec<String>) -> Self {
        self.child_args = args;
        self
    }

    /// Adds a path the broker reads (its config file, its cassettes), which
    /// no teammate's directory may contain.
    pub fn protecting(mut self, kind: Kind, path: impl Into<PathBuf>) -> Self {
        self.protected.push(Protected::new(kind, path.into()));
        self
    }

    /// The broker.
    pub fn hub(&self) -> &Arc<ModelHub> {
        &self.hub
    }

    /// The flags for a `teamhost teammate` child.
    pub fn child_args(&self) -> &[String] {
        &self.child_args
    }

    /// The paths no teammate's directory may contain.
    pub fn protected(&self) -> &[Protected] {
        &self.protected
    }
}

impl Default for ModelAccess {
    fn default() -> Self {
        ModelAccess::new(ModelHub::none())
    }
}

impl std::fmt::Debug for ModelAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAccess")
            .field("child_args", &self.child_args)
            .field("protected", &self.protected)
            .finish_non_exhaustive()
    }
}
