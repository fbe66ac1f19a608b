//! (being written)
/// The host's model config.
#[derive(Debug, Clone, Default)]
pub struct ModelConfig;
