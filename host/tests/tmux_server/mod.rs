//! A tmux server on a private socket for the tests that drive real tmux
//! (`tmux -S <tmp>/sock`), killed on drop. Each test file adds the methods it
//! needs in its own `impl TmuxServer`.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A tmux server on the socket `sock`; the first `new-session` starts it.
pub struct TmuxServer {
    /// The server's socket.
    pub sock: PathBuf,
}

impl TmuxServer {
    /// Runs `tmux -S sock ARGS`.
    pub fn cmd(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .args(args)
            .output()
            .expect("tmux runs (scripts/test installs it)")
    }

    /// Runs `tmux -S sock ARGS`, which must succeed; answers its stdout,
    /// trimmed.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}
