//! HTTP through the proxy: `CONNECT host:port` opens a tunnel; a request in
//! absolute form (`GET http://host/path HTTP/1.1`) is forwarded in origin
//! form, one request per connection (`Connection: close`), without the
//! `Proxy-*` headers. An `https://` URL goes through `CONNECT`, as every
//! client sends it. A head that is not strictly HTTP/1.x (a bare CR or LF,
//! a byte that is not printable ASCII, a request line of more or fewer than
//! three tokens) is a 400, before any rule is read.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Client, Proxy, Slot, MAX_HEAD};
use crate::network::target::Target;

/// A request's head, parsed.
struct Head {
    method: String,
    target: String,
    version: String,
    /// Header lines as sent, without their CRLF.
    headers: Vec<String>,
}

impl Proxy {
    /// Serves one HTTP client whose first byte was `first`.
    pub(super) async fn http(
        &self,
        client: &mut impl Client,
        slot: &mut Slot,
        first: u8,
    ) -> Result<(), String> {
        let wait = self.limits.request_timeout;
        let (head, rest) = match tokio::time::timeout(wait, read_head(client, first)).await {
            Ok(Ok(read)) => read,
            Ok(Err(why)) => return self.refuse(client, slot, 400, "(request)", why).await,
            Err(_) => {
                let why = format!("the request's head did not come within {wait:?}");
                return self.refuse(client, slot, 408, "(request)", why).await;
            }
        };
        let head = match parse_head(&head) {
            Ok(h) => h,
            Err(why) => return self.refuse(client, slot, 400, "(request)", why).await,
        };
        let connect = head.method == "CONNECT";
        let (target, path) = match connect {
            true => match Target::parse_authority(&head.target) {
                Ok(t) => (t, String::new()),
                Err(why) => return self.refuse(client, slot, 400, &head.target, why).await,
            },
            false => match absolute_http(&head.target) {
                Ok(found) => found,
                Err(why) => return self.refuse(client, slot, 400, &head.target, why).await,
            },
        };
        let addrs = match self.admit(&target).await {
            Ok(a) => a,
            Err(why) => {
                return self
                    .refuse(client, slot, 403, &target.to_string(), why)
                    .await
            }
        };
        let mut server = match self.connect(&target, &addrs).await {
            Ok(s) => s,
            Err(why) => {
                return self
                    .refuse(client, slot, 502, &target.to_string(), why)
                    .await
            }
        };
        if connect {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
                .map_err(|e| e.to_string())?;
        } else {
            let mut out = format!("{} {path} {}\r\n", head.method, head.version);
            for h in &head.headers {
                let name = h
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                    continue;
                }
                out.push_str(h);
                out.push_str("\r\n");
            }
            out.push_str("Connection: close\r\n\r\n");
            self.spend(out.len(), true)?;
            server
                .write_all(out.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
        }
        if !rest.is_empty() {
            self.spend(rest.len(), true)?;
            server.write_all(&rest).await.map_err(|e| e.to_string())?;
        }
        self.relay(client, server).await
    }

    /// Answers `status` with `why` as the body, notes the refusal of
    /// `what`, frees the connection's slot, and returns `why` as the
    /// error.
    async fn refuse(
        &self,
        client: &mut impl Client,
        slot: &mut Slot,
        status: u16,
        what: &str,
        why: String,
    ) -> Result<(), String> {
        self.note_refused(what, &why);
        // The slot is free before the client can see the answer.
        slot.take();
        let reason = match status {
            400 => "Bad Request",
            403 => "Forbidden",
            408 => "Request Timeout",
            _ => "Bad Gateway",
        };
        let body = format!("teamhost network: {why}\n");
        let reply = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = client.write_all(reply.as_bytes()).await;
        super::close_gently(client).await;
        Err(why)
    }
}

/// Reads up to the end of the head (`\r\n\r\n`): the head, and what came
/// after it in the same reads.
async fn read_head(client: &mut impl Client, first: u8) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = vec![first];
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!(
                "the request's head is longer than {MAX_HEAD} bytes"
            ));
        }
        let n = client.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the request ended before its head did".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Parses a head (without its final CRLF CRLF) strictly.
fn parse_head(head: &[u8]) -> Result<Head, String> {
    if let Some(b) = head
        .iter()
        .find(|b| !(b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n')))
    {
        return Err(format!(
            "the request holds the byte 0x{b:02x}, which HTTP heads do not"
        ));
    }
    let text = std::str::from_utf8(head).map_err(|e| e.to_string())?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let lines: Vec<&str> = lines.collect();
    if line.contains(['\r', '\n', '\t']) || lines.iter().any(|l| l.contains(['\r', '\n'])) {
        return Err("the request holds a bare CR or LF: a line break that is not CRLF".into());
    }
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(format!(
            "{line:?} is not a request line (METHOD TARGET HTTP/1.1)"
        ));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("{method:?} is not a method"));
    }
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(format!("{version:?} is not HTTP/1.0 or HTTP/1.1"));
    }
    if target.is_empty() {
        return Err("the request names no target".into());
    }
    for h in &lines {
        if !h.contains(':') || h.starts_with([' ', '\t']) {
            return Err(format!("{h:?} is not a header line"));
        }
    }
    Ok(Head {
        method: method.to_string(),
        target: target.to_string(),
        version: version.to_string(),
        headers: lines.iter().map(|l| l.to_string()).collect(),
    })
}

/// The target and origin-form path of an absolute `http://` URL.
fn absolute_http(text: &str) -> Result<(Target, String), String> {
    let url = url::Url::parse(text).map_err(|e| {
        format!("{text:?} is not an absolute URL ({e}): a proxy request names http://host/path, and https goes through CONNECT")
    })?;
    if url.scheme() != "http" {
        return Err(format!(
            "{text:?}: only http:// is forwarded; an {}:// URL goes through CONNECT",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{text:?}: credentials in the URL are refused"));
    }
    let host = url
        .host_str()
        .ok_or_else(|| format!("{text:?} names no host"))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let target = Target::new(host, port)?;
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok((target, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strict_head_parses_and_the_rest_is_refused() {
        let h = parse_head(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443").unwrap();
        assert_eq!(
            (h.method.as_str(), h.target.as_str()),
            ("CONNECT", "example.com:443")
        );
        for bad in [
            &b"CONNECT example.com:443\r\nHost: x HTTP/1.1"[..],
            b"CONNECT example.com:443 HTTP/1.1 extra",
            b"CONNECT  example.com:443 HTTP/1.1",
            b"CONNECT example.com:443\nX: y HTTP/1.1",
            b"CONNECT example.com:443 HTTP/1.1\r\nX: a\rb",
            b"connect example.com:443 HTTP/1.1",
            b"CONNECT example.com:443 HTTP/2",
            b"GET http://a/\x7f HTTP/1.1",
            b"GET http://a/ HTTP/1.1\r\n folded",
        ] {
            assert!(
                parse_head(bad).is_err(),
                "{:?} parsed",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn absolute_urls_become_origin_form() {
        let (t, p) = absolute_http("http://Example.com:8080/a/b?c=d").unwrap();
        assert_eq!(
            (t.to_string(), p.as_str()),
            ("example.com:8080".to_string(), "/a/b?c=d")
        );
        let (t, _) = absolute_http("http://0x7f000001/").unwrap();
        assert_eq!(t.to_string(), "127.0.0.1:80");
        assert!(absolute_http("https://example.com/").is_err());
        assert!(absolute_http("http://u:p@example.com/").is_err());
        assert!(absolute_http("/relative").is_err());
    }
}
