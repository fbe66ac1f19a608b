//! [`OutboundHttp`]: the send hook wasmtime-wasi-http calls for each
//! `outgoing-handler.handle`. In order:
//!
//! 1. the teammate has a network whose `allowed_outbound_hosts` is not
//!    empty, else refused;
//! 2. the request's scheme (`http`, `https`), host (read as the proxy
//!    reads hosts: every IPv4 spelling is its address) and port (the
//!    scheme's own when none is written) match an entry of
//!    `allowed_outbound_hosts`, else refused, the error naming the key;
//! 3. a `CONNECT` to that host and port through the teammate's proxy
//!    (`tunnel.rs`): the network rules, the lead's answer for an unnamed
//!    host, the check of every address, the budgets and the record, as
//!    for Bash; a refusal carries the proxy's reason;
//! 4. TLS for `https` and the HTTP/1.1 exchange (`send.rs`).
//!
//! The usage record beside the teammate's log is written once the proxy
//! has answered, before the guest sees the response, and again when the
//! response's body ends or fails, before the guest reads that end (with
//! the bytes the exchange carried, or a spent budget's cut).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::refusal::refused;
use super::send::Sent;
use super::GRANT_KEY;
use crate::network::Target;
use crate::runtime::NetworkSeat;

/// A teammate's `wasi:http` send hook (see the module docs).
pub struct OutboundHttp {
    seat: Option<Arc<NetworkSeat>>,
}

impl OutboundHttp {
    /// The hook of a teammate with `seat` (`None`: no network; every
    /// request refused).
    pub fn new(seat: Option<Arc<NetworkSeat>>) -> OutboundHttp {
        OutboundHttp { seat }
    }
}

impl WasiHttpHooks for OutboundHttp {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Result<Sent, Error>> + Send> {
        // How a response's processing ended, for wasi:http 0.3; the 0.2
        // handler passes one that is always `Ok`, and nothing waits on it.
        drop(fut);
        let seat = self.seat.clone();
        Box::new(async move { send_through(seat, request, options).await })
    }
}

/// Steps 1–4 of the module docs.
async fn send_through(
    seat: Option<Arc<NetworkSeat>>,
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<Sent, Error> {
    let Some(seat) = seat.filter(|s| !s.outbound().is_empty()) else {
        return Err(refused(format!(
            "this teammate may send no wasi:http request (no {GRANT_KEY})"
        )));
    };
    let uri = request.uri();
    let scheme = uri.scheme_str().unwrap_or_default().to_string();
    let host = uri.host().ok_or(Error::HttpRequestUriInvalid)?;
    let port = match (uri.port_u16(), scheme.as_str()) {
        (Some(p), _) => p,
        (None, "https") => 443,
        (None, _) => 80,
    };
    let target = Target::new(host, port).map_err(|why| refused(format!("{host}: {why}")))?;
    if !seat.outbound().allows(&scheme, &target) {
        let why = format!("{scheme}://{target} is not in this teammate's {GRANT_KEY}");
        tracing::info!(%why, "a wasi:http request was refused");
        return Err(refused(why));
    }
    seat.note_http();
    let tunnel = super::tunnel::open(
        seat.proxy(),
        &target,
        options.and_then(|o| o.connect_timeout),
    )
    .await;
    let keeper = seat.clone();
    let _ = tokio::task::spawn_blocking(move || keeper.keep_record()).await;
    let (response, rest) =
        super::send::send(tunnel?, &target, scheme == "https", request, options).await?;
    let response = response.map(|body| {
        KeptAtEnd {
            body,
            seat: Some(seat),
        }
        .boxed_unsync()
    });
    Ok((response, rest))
}

/// A response body that keeps the usage record when it ends or fails,
/// before the guest reads that end: the record then holds the bytes the
/// exchange carried, or the cut of a spent budget.
struct KeptAtEnd {
    body: WasiBody,
    seat: Option<Arc<NetworkSeat>>,
}

impl http_body::Body for KeptAtEnd {
    type Data = bytes::Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            // A small file written without fdatasync.
            if let Some(seat) = self.seat.take() {
                seat.keep_record();
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
