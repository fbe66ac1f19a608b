//! Hooks, as the reference defines them: shell commands the lead configures,
//! run by the host at points of a teammate's life, with the event as JSON on
//! stdin.
//!
//! | event | input fields | exit 2 means |
//! |---|---|---|
//! | `TeammateIdle` | `teammate_name`, `team_name` | the teammate does not go idle: it gets the hook's stderr as a new message and keeps working |
//! | `TaskCompleted` | `task_id`, `task_subject`, `task_description`, `teammate_name`, `team_name` | the completion is refused: the task stays open and the teammate's call fails with the hook's stderr |
//! | `TeammateStart` | `teammate_name`, `team_name`, `agent_id`, `agent_type` | nothing (informational, like the reference's `SubagentStart`) |
//! | `TeammateStop` | `teammate_name`, `team_name`, `agent_id`, `agent_type` | nothing (like `SubagentStop`) |
//!
//! Every input also carries `hook_event_name`. Exit 0 lets things go on; any
//! other exit, a hook that cannot start and a hook still running at
//! [`Hooks::timeout`] (it is killed) are failures: reported (logged, and told
//! to the lead by the callers), never fatal to the teammate or the host.
//! Hooks run on the host, with the host's environment: they are the lead's
//! configuration, not the teammate's.

//!
//! They are configured in a manifest's `[hooks]`, through
//! [`HostOptions::hooks`](crate::embed::HostOptions::hooks), or in Claude
//! Code's settings format ([`settings`]), which `teamhost teammate` reads.

pub mod settings;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// The configured hooks. `Hooks::default()`: none, 60 s timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooks {
    /// Commands run when a teammate is about to go idle.
    pub teammate_idle: Vec<String>,
    /// Commands run when a teammate marks a task completed.
    pub task_completed: Vec<String>,
    /// Commands run when a teammate has started.
    pub teammate_start: Vec<String>,
    /// Commands run when a teammate has stopped.
    pub teammate_stop: Vec<String>,
    /// How long one command may run before it is killed.
    pub timeout: Duration,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            teammate_idle: Vec::new(),
            task_completed: Vec::new(),
            teammate_start: Vec::new(),
            teammate_stop: Vec::new(),
            timeout: Duration::from_secs(60),
        }
    }
}

/// One event and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEvent {
    /// A teammate is about to go idle.
    TeammateIdle {
        /// The teammate.
        teammate_name: String,
        /// Its team.
        team_name: String,
    },
    /// A teammate marks a task completed.
    TaskCompleted {
        /// Task id.
        task_id: String,
        /// Its subject.
        task_subject: String,
        /// Its description.
        task_description: String,
        /// Who completes it.
        teammate_name: String,
        /// The team.
        team_name: String,
    },
    /// A teammate started (`true`) or stopped (`false`).
    Lifecycle {
        /// Started or stopped.
        started: bool,
        /// The teammate.
        teammate_name: String,
        /// Its team.
        team_name: String,
        /// `name@team`.
        agent_id: String,
        /// Its role.
        agent_type: String,
    },
}

impl HookEvent {
    fn name(&self) -> &'static str {
        match self {
            HookEvent::TeammateIdle { .. } => "TeammateIdle",
            HookEvent::TaskCompleted { .. } => "TaskCompleted",
            HookEvent::Lifecycle { started: true, .. } => "TeammateStart",
            HookEvent::Lifecycle { started: false, .. } => "TeammateStop",
        }
    }

    /// The JSON the hook reads on stdin.
    pub fn input(&self) -> Value {
        let mut v = match self {
            HookEvent::TeammateIdle {
                teammate_name,
                team_name,
            } => json!({"teammate_name": teammate_name, "team_name": team_name}),
            HookEvent::TaskCompleted {
                task_id,
                task_subject,
                task_description,
                teammate_name,
                team_name,
            } => json!({
                "task_id": task_id,
                "task_subject": task_subject,
                "task_description": task_description,
                "teammate_name": teammate_name,
                "team_name": team_name,
            }),
            HookEvent::Lifecycle {
                teammate_name,
                team_name,
                agent_id,
                agent_type,
                ..
            } => json!({
                "teammate_name": teammate_name,
                "team_name": team_name,
                "agent_id": agent_id,
                "agent_type": agent_type,
            }),
        };
        v["hook_event_name"] = json!(self.name());
        v
    }
}

/// What the hooks of one event decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The stderr of every hook that exited 2 (block), in order.
    pub blocked: Vec<String>,
    /// Hooks that failed (other exits, could not start, timed out), each a
    /// sentence for the lead.
    pub failures: Vec<String>,
}

impl Outcome {
    /// Whether some hook exited 2.
    pub fn is_blocked(&self) -> bool {
        !self.blocked.is_empty()
    }

    /// The blocking hooks' stderr, joined: what the teammate is shown.
    pub fn message(&self) -> String {
        self.blocked.join("\n")
    }
}

impl Hooks {
    /// Whether any hook is configured for `event`.
    pub fn wants(&self, event: &HookEvent) -> bool {
        !self.commands(event).is_empty()
    }

    fn commands(&self, event: &HookEvent) -> &[String] {
        match event {
            HookEvent::TeammateIdle { .. } => &self.teammate_idle,
            HookEvent::TaskCompleted { .. } => &self.task_completed,
            HookEvent::Lifecycle { started: true, .. } => &self.teammate_start,
            HookEvent::Lifecycle { started: false, .. } => &self.teammate_stop,
        }
    }

    /// Runs every command configured for `event`, one after the other.
    pub async fn run(&self, event: &HookEvent) -> Outcome {
        let mut outcome = Outcome::default();
        let input = event.input().to_string();
        for command in self.commands(event) {
            match run_one(command, &input, self.timeout).await {
                Ok((0, _)) => {}
                Ok((2, stderr)) => outcome.blocked.push(stderr.trim_end().to_string()),
                Ok((code, stderr)) => outcome.failures.push(format!(
                    "{} hook `{command}` exited {code}: {}",
                    event.name(),
                    stderr.trim_end()
                )),
                Err(why) => outcome
                    .failures
                    .push(format!("{} hook `{command}` {why}", event.name())),
            }
        }
        for f in &outcome.failures {
            tracing::warn!("{f}");
        }
        outcome
    }
}

/// Runs one hook; `Ok((exit code, stderr))` or why it did not finish.
async fn run_one(command: &str, input: &str, timeout: Duration) -> Result<(i32, String), String> {
    let mut child = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is fine.
        let _ = stdin.write_all(input.as_bytes()).await;
    }
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => Err(format!("timed out after {timeout:?} and was killed")),
        Ok(Err(e)) => Err(format!("failed: {e}")),
        Ok(Ok(out)) => Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> HookEvent {
        HookEvent::TeammateIdle {
            teammate_name: "w".into(),
            team_name: "t".into(),
        }
    }

    #[tokio::test]
    async fn exit_two_blocks_with_stderr_and_other_exits_are_reported_failures() {
        let hooks = Hooks {
            teammate_idle: vec![
                "true".into(),
                "cat >/dev/null; echo 'not yet: run the tests' >&2; exit 2".into(),
                "exit 7".into(),
            ],
            ..Hooks::default()
        };
        let out = hooks.run(&idle()).await;
        assert_eq!(out.blocked, ["not yet: run the tests"]);
        assert_eq!(out.failures.len(), 1);
        assert!(out.failures[0].contains("exited 7"), "{:?}", out.failures);
    }

    #[tokio::test]
    async fn the_input_is_the_event_as_json_on_stdin() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("input.json");
        let hooks = Hooks {
            teammate_idle: vec![format!("cat > {}", file.display())],
            ..Hooks::default()
        };
        assert_eq!(hooks.run(&idle()).await, Outcome::default());
        let got: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            got,
            json!({"teammate_name": "w", "team_name": "t", "hook_event_name": "TeammateIdle"})
        );
    }

    #[tokio::test]
    async fn a_hanging_hook_is_killed_at_its_timeout_and_reported() {
        let hooks = Hooks {
            teammate_idle: vec!["sleep 60".into()],
            timeout: Duration::from_millis(200),
            ..Hooks::default()
        };
        let started = std::time::Instant::now();
        let out = hooks.run(&idle()).await;
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(!out.is_blocked());
        assert!(out.failures[0].contains("timed out"), "{:?}", out.failures);
    }
}
