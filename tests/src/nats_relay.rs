//! [`NatsRelay`]: a TCP relay between NATS clients and one `nats-server`,
//! on real loopback sockets, that can lose or age the server's answers on
//! purpose. It reads the NATS protocol in both directions (`PUB`/`HPUB`
//! from the client, `MSG`/`HMSG` from the server; every other line passes
//! through as is), remembers which request each reply subject belongs to,
//! and applies the faults a test arms to the answers of matching requests:
//!
//! - [`NatsRelay::drop_answer`]: the next answer to a matching request never
//!   reaches the client, although the server did what was asked (a write
//!   that landed and whose acknowledgement was lost). The test hears about
//!   it on a channel, so it can act at that moment (kill the server, let a
//!   rival write) without sleeping.
//! - [`NatsRelay::stale_answer`]: the next answer to a matching request is
//!   replaced by the last answer the relay passed for such a request before
//!   (an earlier, true state: what a replica behind the leader, or a leader
//!   already deposed, answers).
//!
//! Everything else is relayed byte for byte. When either side closes, the
//! other is closed too (a killed server looks the same to the client as
//! without the relay). Dropped, it stops listening and closes every
//! connection it relays.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

/// What a client asked: the subject it published to, its headers (raw, as
/// sent, `NATS/1.0` line included) and its body.
#[derive(Debug, Clone)]
pub struct Request {
    pub subject: String,
    pub headers: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Request {
    /// Whether the request's body contains `text`.
    pub fn body_has(&self, text: &str) -> bool {
        contains(&self.payload, text.as_bytes())
    }

    /// Whether its headers contain `text`.
    pub fn headers_have(&self, text: &str) -> bool {
        contains(&self.headers, text.as_bytes())
    }
}

type Matcher = Box<dyn Fn(&Request) -> bool + Send>;

/// One armed fault.
enum Fault {
    Drop(Matcher, mpsc::Sender<Request>),
    Stale(Matcher, mpsc::Sender<Request>),
}

#[derive(Default)]
struct Shared {
    faults: Vec<Fault>,
    /// The last answer passed for each request (subject and body), for
    /// stale faults to replay.
    answers: Vec<(Request, Frame)>,
}

/// A relay listening on 127.0.0.1, forwarding to one server.
pub struct NatsRelay {
    port: u16,
    shared: Arc<Mutex<Shared>>,
    /// Set on drop: the listener stops.
    closed: Arc<AtomicBool>,
    /// Every socket it relays, shut down on drop.
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Drop for NatsRelay {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        // Wakes the listener, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for s in lock(&self.sockets).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl NatsRelay {
    /// Starts relaying from a fresh loopback port to the server on
    /// `127.0.0.1:upstream`. Each client connection gets its own connection
    /// to the server.
    pub fn start(upstream: u16) -> NatsRelay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay's port");
        let port = listener.local_addr().expect("the relay's address").port();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let closed = Arc::new(AtomicBool::new(false));
        let sockets: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (s, c, k) = (shared.clone(), closed.clone(), sockets.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if c.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                for sock in [&client, &server] {
                    if let Ok(sock) = sock.try_clone() {
                        lock(&k).push(sock);
                    }
                }
                relay(client, server, s.clone());
            }
        });
        NatsRelay {
            port,
            shared,
            closed,
            sockets,
        }
    }

    /// The relay's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `nats://127.0.0.1:PORT/prefix`: a store URL through the relay.
    pub fn url(&self, prefix: &str) -> String {
        format!("nats://127.0.0.1:{}/{prefix}", self.port)
    }

    /// The next answer to a request `matches` accepts is not delivered; the
    /// request is sent on the returned channel when that happens.
    pub fn drop_answer(
        &self,
        matches: impl Fn(&Request) -> bool + Send + 'static,
    ) -> mpsc::Receiver<Request> {
        let (tx, rx) = mpsc::channel();
        self.lock().faults.push(Fault::Drop(Box::new(matches), tx));
        rx
    }

    /// The next answer to a request `matches` accepts is replaced by the
    /// last answer passed to an identical request (same subject and body)
    /// earlier; the request is sent on the returned channel when
    /// that happens. A request never answered before passes unchanged and
    /// leaves the fault armed.
    pub fn stale_answer(
        &self,
        matches: impl Fn(&Request) -> bool + Send + 'static,
    ) -> mpsc::Receiver<Request> {
        let (tx, rx) = mpsc::channel();
        self.lock().faults.push(Fault::Stale(Box::new(matches), tx));
        rx
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One protocol unit: its control line (without `\r\n`) and, for
/// `PUB`/`HPUB`/`MSG`/`HMSG`, the bytes after it (payload and `\r\n`).
#[derive(Debug, Clone)]
struct Frame {
    line: String,
    body: Vec<u8>,
}

impl Frame {
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.line.len() + 2 + self.body.len());
        out.extend_from_slice(self.line.as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }

    fn op(&self) -> String {
        self.line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_uppercase()
    }

    fn args(&self) -> Vec<&str> {
        self.line.split_whitespace().skip(1).collect()
    }
}

/// Reads one frame; `None` at the end of the stream.
fn read_frame(r: &mut impl BufRead) -> Option<Frame> {
    let mut raw = Vec::new();
    if r.read_until(b'\n', &mut raw).ok()? == 0 {
        return None;
    }
    let line = String::from_utf8_lossy(&raw)
        .trim_end_matches(['\r', '\n'])
        .to_string();
    let mut frame = Frame {
        line,
        body: Vec::new(),
    };
    // The total size is the last argument of all four.
    let size = match frame.op().as_str() {
        "PUB" | "HPUB" | "MSG" | "HMSG" => frame.args().last()?.parse::<usize>().ok()?,
        _ => return Some(frame),
    };
    frame.body = vec![0; size + 2];
    r.read_exact(&mut frame.body).ok()?;
    Some(frame)
}

/// Relays one client connection until either side closes.
fn relay(client: TcpStream, server: TcpStream, shared: Arc<Mutex<Shared>>) {
    let asked: Arc<Mutex<std::collections::HashMap<String, Request>>> = Arc::default();
    let (c_read, mut c_write) = (client.try_clone().expect("clone"), client);
    let (s_read, mut s_write) = (server.try_clone().expect("clone"), server);
    let (c_close, s_close) = (
        c_read.try_clone().expect("clone"),
        s_read.try_clone().expect("clone"),
    );
    let asked2 = asked.clone();
    // Client → server: note each request's reply subject.
    std::thread::spawn(move || {
        let mut r = BufReader::new(c_read);
        while let Some(f) = read_frame(&mut r) {
            let op = f.op();
            if op == "PUB" || op == "HPUB" {
                let args = f.args();
                let (subject, reply) = (args[0].to_string(), args.get(1).copied());
                let has_reply =
                    (op == "PUB" && args.len() == 3) || (op == "HPUB" && args.len() == 4);
                if let (true, Some(reply)) = (has_reply, reply) {
                    let split = if op == "HPUB" {
                        args[2].parse::<usize>().unwrap_or(0)
                    } else {
                        0
                    };
                    let content = &f.body[..f.body.len() - 2];
                    let request = Request {
                        subject,
                        headers: content[..split].to_vec(),
                        payload: content[split..].to_vec(),
                    };
                    lock(&asked2).insert(reply.to_string(), request);
                }
            }
            if s_write.write_all(&f.bytes()).is_err() {
                break;
            }
        }
        let _ = s_close.shutdown(Shutdown::Both);
    });
    // Server → client: answers go through the armed faults.
    std::thread::spawn(move || {
        let mut r = BufReader::new(s_read);
        while let Some(f) = read_frame(&mut r) {
            let op = f.op();
            let mut out = Some(f.clone());
            if op == "MSG" || op == "HMSG" {
                let subject = f.args()[0].to_string();
                let request = lock(&asked).remove(&subject);
                if let Some(request) = request {
                    out = answer(&shared, &request, f);
                }
            }
            if let Some(out) = out {
                if c_write.write_all(&out.bytes()).is_err() {
                    break;
                }
            }
        }
        let _ = c_close.shutdown(Shutdown::Both);
    });
}

/// What reaches the client for `request`'s answer `f`.
fn answer(shared: &Mutex<Shared>, request: &Request, f: Frame) -> Option<Frame> {
    let mut s = lock(shared);
    let same = |r: &Request| r.subject == request.subject && r.payload == request.payload;
    let hit = s.faults.iter().position(|fault| match fault {
        Fault::Drop(m, _) => m(request),
        Fault::Stale(m, _) => m(request) && s.answers.iter().any(|(r, _)| same(r)),
    });
    let out = match hit.map(|i| s.faults.remove(i)) {
        Some(Fault::Drop(_, tx)) => {
            let _ = tx.send(request.clone());
            None
        }
        Some(Fault::Stale(_, tx)) => {
            let (_, old) = s
                .answers
                .iter()
                .rev()
                .find(|(r, _)| same(r))
                .expect("checked above")
                .clone();
            let _ = tx.send(request.clone());
            // The old answer, addressed to this request's reply subject
            // and subscription.
            let (now, then) = (f.args(), old.args());
            let mut line = vec![old.op(), now[0].to_string(), now[1].to_string()];
            line.extend(then[2..].iter().map(|a| a.to_string()));
            Some(Frame {
                line: line.join(" "),
                body: old.body,
            })
        }
        None => Some(f),
    };
    if let Some(passed) = &out {
        s.answers.retain(|(r, _)| !same(r));
        s.answers.push((request.clone(), passed.clone()));
        if s.answers.len() > 4096 {
            s.answers.remove(0);
        }
    }
    out
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}
