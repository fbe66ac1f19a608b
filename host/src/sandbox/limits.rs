//! Resource limits of one teammate, with their defaults. Plain data: the
//! runtime enforces them (memory through the store limiter, CPU through the
//! epoch deadline, wall time around each turn, sizes at each call).
//!
//! | limit | default | breach |
//! |---|---|---|
//! | `memory_bytes` | 64 MiB | trap: the teammate fails, the lead is told "memory limit" |
//! | `cpu_per_turn` | 60 s | trap: "CPU limit" |
//! | `wall_per_turn` | 10 min | the turn is abandoned, the teammate fails: "wall-time limit" |
//! | `max_message_bytes` | 1 MiB | typed `invalid` error; nothing is sent |
//! | `max_tool_output_bytes` | 256 KiB | output cut, marked `truncated` |
//! | `ask_timeout` | 5 min | the waiting tool call is denied |
//! | `max_pending_requests` | 1 | typed `denied` error (a call waits for its answer, so one is all a single-threaded guest can have) |

use std::time::Duration;

/// Limits of one teammate. `Limits::default()` gives the table above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Linear memory (and tables) per instance, in bytes.
    pub memory_bytes: usize,
    /// CPU a single turn may use (counted in epoch ticks of 10 ms while the
    /// guest runs).
    pub cpu_per_turn: Duration,
    /// Wall time a single turn may take, waiting for approvals included.
    pub wall_per_turn: Duration,
    /// Largest message, plan or broadcast a teammate may send, in bytes.
    pub max_message_bytes: usize,
    /// Largest tool output (file read, search results, each Bash stream).
    pub max_tool_output_bytes: usize,
    /// How long a tool call waits for the lead's answer before it is denied.
    pub ask_timeout: Duration,
    /// Permission requests a teammate may have waiting at once.
    pub max_pending_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            cpu_per_turn: Duration::from_secs(60),
            wall_per_turn: Duration::from_secs(600),
            max_message_bytes: 1 << 20,
            max_tool_output_bytes: 256 << 10,
            ask_timeout: Duration::from_secs(300),
            max_pending_requests: 1,
        }
    }
}

impl Limits {
    /// Checks a message size; the error says which limit and by how much.
    pub fn check_message(&self, what: &str, len: usize) -> Result<(), String> {
        if len > self.max_message_bytes {
            return Err(format!(
                "{what} is {len} bytes; the limit is {} bytes (max_message_bytes)",
                self.max_message_bytes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_over_the_limit_is_refused_with_both_sizes() {
        let l = Limits {
            max_message_bytes: 10,
            ..Limits::default()
        };
        assert!(l.check_message("message", 10).is_ok());
        let e = l.check_message("message", 11).unwrap_err();
        assert!(e.contains("11 bytes") && e.contains("10 bytes"), "{e}");
    }
}
