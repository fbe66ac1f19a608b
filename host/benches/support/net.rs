//! What the network benches share: the sizes they move, an asker that is
//! never needed (every host is named), and the server on 127.0.0.2.

use std::sync::Arc;

use teamhost::network::{Answer, Asker, BoxFuture, Target};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub const BIG: usize = 10 << 20;
pub const SMALL: usize = 100;
pub const REQUESTS: usize = 100;

/// Says no: the benches name every host, so a question is a bug.
pub struct Never;

impl Asker for Never {
    fn ask<'a>(&'a self, _: &'a Target) -> BoxFuture<'a, Answer> {
        Box::pin(async { Answer::No("the bench names every host".into()) })
    }
}

/// A server on 127.0.0.2: a request naming `/big` gets [`BIG`] bytes,
/// anything else [`SMALL`]; with an HTTP/1.1 head when `head` (for curl),
/// else the bare bytes (for a client that counts them). Answers its port.
pub async fn server(head: bool) -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let big = Arc::new(vec![b'x'; BIG]);
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let big = big.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let body: &[u8] = match buf[..n].windows(5).any(|w| w == b"/big ") {
                    true => &big,
                    false => &big[..SMALL],
                };
                if head {
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                }
                let _ = s.write_all(body).await;
                let _ = s.shutdown().await;
            });
        }
    });
    port
}
