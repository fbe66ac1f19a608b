//! (being written)
use super::*;
pub struct Anthropic;
impl Anthropic { pub fn new(_s: ProviderSettings) -> crate::Result<Self> { Ok(Anthropic) } }
impl Provider for Anthropic {
    fn kind(&self) -> &'static str { "anthropic" }
    fn complete<'a>(&'a self, _c: ProviderCall<'a>) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async { Err(ProviderError::Unavailable("not yet".into())) })
    }
}
