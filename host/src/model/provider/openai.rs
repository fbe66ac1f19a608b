//! (being written)
use super::*;
pub struct OpenAi;
impl OpenAi { pub fn new(_s: ProviderSettings) -> crate::Result<Self> { Ok(OpenAi) } }
impl Provider for OpenAi {
    fn kind(&self) -> &'static str { "openai" }
    fn complete<'a>(&'a self, _c: ProviderCall<'a>) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async { Err(ProviderError::Unavailable("not yet".into())) })
    }
}
