//! A tunnel through the teammate's proxy: an in-process stream
//! (`tokio::io::duplex`, no socket) whose other end the proxy serves as
//! it serves a Bash connection, and a `CONNECT host:port` on it. The
//! proxy's answer is read byte by byte up to the end of its head, so not
//! one byte of the tunnel is taken from the client that uses it.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use wasmtime_wasi_http::Error;

use crate::network::{Proxy, Target, MAX_HEAD};

/// Bytes the in-process stream buffers each way.
const BUFFER: usize = 64 * 1024;

/// The most bytes of a refusal's body read for its reason.
const MAX_REASON: usize = 4096;

/// Opens a tunnel to `target` through `proxy`: the stream, once the proxy
/// answered 200; else the proxy's reason as an `internal-error`. `wait`
/// bounds the exchange (the proxy's own bounds apply as well: a question
/// for the lead waits for its answer).
pub(super) async fn open(
    proxy: Arc<Proxy>,
    target: &Target,
    wait: Option<Duration>,
) -> Result<DuplexStream, Error> {
    let exchange = connect(proxy, target);
    match wait {
        Some(wait) => tokio::time::timeout(wait, exchange)
            .await
            .map_err(|_| Error::ConnectionTimeout)?,
        None => exchange.await,
    }
}

async fn connect(proxy: Arc<Proxy>, target: &Target) -> Result<DuplexStream, Error> {
    let (mut client, server) = tokio::io::duplex(BUFFER);
    tokio::spawn(async move { proxy.handle(server).await });
    let request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    client
        .write_all(request.as_bytes())
        .await
        .map_err(Error::Connect)?;
    let head = read_head(&mut client).await?;
    let status = status_of(&head)?;
    if status == 200 {
        return Ok(client);
    }
    let reason = read_reason(&mut client, &head).await;
    Err(super::refusal::refused(match reason.is_empty() {
        true => format!("the proxy answered {status}"),
        false => reason,
    }))
}

/// The proxy's answer up to and without its blank line.
async fn read_head(client: &mut DuplexStream) -> Result<String, Error> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(Error::HttpProtocolError);
        }
        match client.read(&mut byte).await.map_err(Error::Connect)? {
            0 => return Err(Error::ConnectionTerminated),
            _ => head.push(byte[0]),
        }
    }
    head.truncate(head.len() - 4);
    String::from_utf8(head).map_err(|_| Error::HttpProtocolError)
}

/// The status of an answer's head (`HTTP/1.1 200 Connection Established`).
fn status_of(head: &str) -> Result<u16, Error> {
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next().map(str::parse::<u16>)) {
        (Some(v), Some(Ok(status))) if v.starts_with("HTTP/1.") => Ok(status),
        _ => Err(Error::HttpProtocolError),
    }
}

/// A refusal's body (the proxy writes its reason there), at most
/// [`MAX_REASON`] bytes, trimmed.
async fn read_reason(client: &mut DuplexStream, head: &str) -> String {
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REASON);
    let mut body = vec![0u8; length];
    match client.read_exact(&mut body).await {
        Ok(_) => String::from_utf8_lossy(&body).trim().to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http_status_line_is_read_as_one() {
        assert_eq!(
            status_of("HTTP/1.1 200 Connection Established").unwrap(),
            200
        );
        assert_eq!(
            status_of("HTTP/1.1 403 Forbidden\r\nContent-Length: 3").unwrap(),
            403
        );
        assert!(status_of("SSH-2.0 hello").is_err());
        assert!(status_of("HTTP/1.1 two hundred").is_err());
    }
}
