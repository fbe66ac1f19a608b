//! One request over a tunnel the proxy opened: TLS for `https` (rustls
//! with the ring provider and the platform's verifier, as the model
//! providers use; HTTP/1.1 only), then one HTTP/1.1 exchange with hyper.
//!
//! The request's options bound it as wasmtime-wasi-http's own sender
//! does: `connect-timeout` the TLS and HTTP handshakes, `first-byte-timeout`
//! the response's head, `between-bytes-timeout` each silence in its body
//! (600 s each when the guest sets none).

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use crate::network::{Host, Target};

/// What the send hook returns: the response, and the future that drives
/// the rest of the connection while the guest reads the body.
pub(super) type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

/// wasmtime-wasi-http's default for a timeout the guest does not set.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// A stream hyper can speak over: the tunnel, or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// Sends `request` over `tunnel` to `target`, with TLS when `tls`.
pub(super) async fn send(
    tunnel: tokio::io::DuplexStream,
    target: &Target,
    tls: bool,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
) -> Result<Sent, Error> {
    let options = options.unwrap_or_default();
    let connect = options.connect_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let first_byte = options.first_byte_timeout.unwrap_or(DEFAULT_TIMEOUT);
    let between = options
        .between_bytes_timeout
        .unwrap_or(DEFAULT_TIMEOUT)
        .max(Duration::from_nanos(1));
    let stream: Box<dyn Stream> = match tls {
        false => Box::new(tunnel),
        true => {
            let handshake = tls_connector()?.connect(server_name(target)?, tunnel);
            let stream = tokio::time::timeout(connect, handshake)
                .await
                .map_err(|_| Error::ConnectionTimeout)?
                .map_err(Error::Tls)?;
            Box::new(stream)
        }
    };
    let (mut sender, conn) = tokio::time::timeout(
        connect,
        hyper::client::conn::http1::handshake::<_, WasiBody>(TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;
    // The request goes in origin form: the tunnel already names the host.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = path.parse().map_err(|_| Error::HttpRequestUriInvalid)?;

    let exchange = async move {
        let response = tokio::time::timeout(first_byte, sender.send_request(request))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)??;
        let mut silence = tokio::time::interval(between);
        silence.reset();
        Ok::<_, Error>(response.map(|incoming| TimedBody { incoming, silence }.boxed_unsync()))
    };
    // Drive the connection while the response's head comes.
    let mut exchange = pin!(exchange);
    let mut conn = Some(conn);
    let response = poll_fn(|cx| match exchange.as_mut().poll(cx) {
        Poll::Ready(done) => Poll::Ready(done),
        Poll::Pending => {
            let Some(c) = conn.as_mut() else {
                return Poll::Pending;
            };
            let ended = ready!(Pin::new(c).poll(cx));
            conn = None;
            match ended {
                Ok(()) => exchange.as_mut().poll(cx),
                Err(e) => Poll::Ready(Err(Error::from(e))),
            }
        }
    })
    .await?;
    let rest = async move {
        match conn {
            Some(c) => c.await.map_err(|e| match e.is_timeout() {
                true => Error::HttpResponseTimeout,
                false => Error::from(e),
            }),
            None => Ok(()),
        }
    };
    Ok((response, Box::new(rest)))
}

/// The response body, failing after a silence of `between-bytes-timeout`.
struct TimedBody {
    incoming: hyper::body::Incoming,
    silence: tokio::time::Interval,
}

impl http_body::Body for TimedBody {
    type Data = bytes::Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(match e.is_timeout() {
                true => Error::HttpResponseTimeout,
                false => Error::from(e),
            }))),
            Poll::Ready(Some(Ok(frame))) => {
                self.silence.reset();
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(self.silence.poll_tick(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.incoming.size_hint()
    }
}

/// The name the server's certificate must carry.
fn server_name(target: &Target) -> Result<rustls::pki_types::ServerName<'static>, Error> {
    match &target.host {
        Host::Ip(a) => Ok(rustls::pki_types::ServerName::from(*a)),
        Host::Name(n) => rustls::pki_types::ServerName::try_from(n.clone())
            .map_err(|_| Error::HttpRequestUriInvalid),
    }
}

/// The process's TLS client for `wasi:http`: built once.
fn tls_connector() -> Result<tokio_rustls::TlsConnector, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        use rustls_platform_verifier::BuilderVerifierExt;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_platform_verifier())
            .map_err(|e| e.to_string())?
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    });
    match config {
        Ok(c) => Ok(tokio_rustls::TlsConnector::from(c.clone())),
        Err(why) => Err(super::refusal::refused(format!(
            "TLS cannot be set up on this host: {why}"
        ))),
    }
}
