//! A refused `wasi:http` request as the guest sees it: the error code
//! `internal-error` carrying the reason, which `HTTP-request-denied` (no
//! payload in wasi:http 0.2) cannot carry.

use wasmtime_wasi_http::Error;

/// The prefix of every refusal's text, as the proxy writes its own.
const PREFIX: &str = "teamhost network: ";

/// `internal-error` with `why`, prefixed once with [`PREFIX`].
pub(super) fn refused(why: String) -> Error {
    match why.starts_with(PREFIX) {
        true => Error::InternalError(Some(why)),
        false => Error::InternalError(Some(format!("{PREFIX}{why}"))),
    }
}
