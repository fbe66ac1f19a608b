//! (being written)
/// The host's model config.
#[derive(Debug, Clone, Default)]
pub struct ModelConfig;
impl ModelConfig {
    /// Placeholder until the real loader lands.
    pub fn load(_path: Option<&std::path::Path>) -> crate::Result<Self> {
        Ok(ModelConfig)
    }
}
