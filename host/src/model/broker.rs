//! (being written) The host-wide [`ModelHub`] and the per-teammate [`ModelClient`].
use std::path::PathBuf;
use std::sync::Arc;

use super::{CassetteMode, ModelConfig, ModelError, ModelInfo, ModelPolicy, Request, Response, Spend};

/// Host-wide model state.
pub struct ModelHub;

impl ModelHub {
    /// Builds the hub.
    pub fn new(
        _config: ModelConfig,
        _mode: CassetteMode,
        _cassettes: Option<PathBuf>,
    ) -> crate::Result<Arc<Self>> {
        Ok(Arc::new(ModelHub))
    }
    /// A hub with nothing configured.
    pub fn none() -> Arc<Self> {
        Arc::new(ModelHub)
    }
    /// The client of one teammate.
    pub fn client(
        self: &Arc<Self>,
        _team: &str,
        _teammate: &str,
        _policy: Option<ModelPolicy>,
    ) -> crate::Result<ModelClient> {
        Ok(ModelClient)
    }
}

/// One teammate's view of the models.
#[derive(Clone)]
pub struct ModelClient;

impl ModelClient {
    pub fn models(&self) -> Vec<ModelInfo> {
        Vec::new()
    }
    pub async fn complete(&self, _req: Request) -> Result<Response, ModelError> {
        Err(ModelError::Denied("no".into()))
    }
    pub fn spent(&self) -> Spend {
        Spend::default()
    }
    pub fn start_turn(&self) {}
    pub fn enabled(&self) -> bool {
        false
    }
    pub fn take_budget_notice(&self) -> Option<String> {
        None
    }
}
