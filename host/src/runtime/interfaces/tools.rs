//! `teamhost:agent/tools`: Read, Write, Edit, Glob, Grep and Bash, each decided
//! by the sandbox before the host runs it in the teammate's directory.
//!
//! Allow → run it ([`crate::tools::ToolBox`]). Deny → `denied` with the reason.
//! Ask → a `permission_request` goes to the lead and only this call waits
//! ([`ask.rs`](super::ask)); the lead's answer may change the input, add rules
//! or change the mode. Deny rules are checked again on the input that finally
//! runs, so an approval can never override one.

use std::path::Path;
use std::sync::Arc;

use super::{blocking_tool, ToolGlue};
use crate::runtime::bindings::tools::{
    BashOutput, GrepMode, GrepOutput, Host, ReadOutput, ToolInfo, Verdict,
};
use crate::runtime::bindings::types::Error as WitError;
use crate::runtime::GuestError;
use crate::sandbox::{
    BashInput, Decision, EditInput, GlobInput, GrepInput, ReadInput, ToolCall, ToolName, WriteInput,
};
use crate::tools::bash::Watch;
use crate::tools::{Confinement, DiskBudget, Redactor, ToolBox};

/// How often the disk is measured while a Bash call runs, at most (a slow
/// measurement spaces the next ones out: at most a tenth of the call's time
/// goes to measuring). What a command writes between two measurements is
/// what the directories can pass the budget by.
const BASH_WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

impl ToolGlue<'_> {
    /// Decides `call`; asks the lead when the sandbox says so. Returns the call
    /// to run (the lead may have changed its input). A refusal's text has the
    /// host's paths taken out ([`Redactor`]), the paths the guest spelled
    /// kept as it spelled them.
    async fn authorize(&mut self, call: ToolCall) -> Result<ToolCall, GuestError> {
        let spelled = spelled(&call);
        let decided = self.authorize_unredacted(call).await;
        decided.map_err(|e| {
            let r = spelled.iter().fold(self.redactor(), |r, s| r.keep(s));
            e.map_wit(|e| redact_with(&r, e))
        })
    }

    async fn authorize_unredacted(&mut self, call: ToolCall) -> Result<ToolCall, GuestError> {
        // Where the call's path leads through links is looked up here, so
        // `decide_on_disk` stays pure (no I/O inside the decision).
        match self.permissions.decide_on_disk(&call) {
            Decision::Allow { .. } => Ok(call),
            Decision::Deny { reason } => Err(WitError::Denied(reason).into()),
            Decision::Ask {
                reason,
                suggestions,
            } => {
                let approved = self.ask_lead(call, reason, suggestions).await?;
                // An approval never overrides a deny rule.
                match self.permissions.decide_on_disk(&approved) {
                    Decision::Deny { reason } => Err(WitError::Denied(reason).into()),
                    Decision::Allow { .. } | Decision::Ask { .. } => Ok(approved),
                }
            }
        }
    }

    fn toolbox(&self) -> Arc<ToolBox> {
        self.tools.tools.clone()
    }

    /// What hides the host's paths from this teammate: its directory (as
    /// `.`) and the teamhost home (plans, logs, task lists) under a label.
    fn redactor(&self) -> Redactor {
        self.tools
            .hidden_dirs
            .iter()
            .fold(Redactor::for_tools(&self.tools.tools), |r, dir| {
                r.hide(dir, "<teamhost home>")
            })
    }

    /// A tool's result with the host's paths taken out of its guest
    /// error's message: the choke point every tool error passes before it
    /// reaches the guest. A trap passes unchanged.
    fn redacted<T>(&self, r: Result<T, GuestError>) -> Result<T, GuestError> {
        r.map_err(|e| e.map_wit(|e| redact_with(&self.redactor(), e)))
    }

    /// The teammate's disk budget ([`Limits::disk_bytes`](crate::sandbox::Limits)).
    fn disk_budget(&self) -> DiskBudget {
        DiskBudget {
            bytes: self.fixed.limits.disk_bytes,
            entries: self.fixed.limits.disk_walk_entries,
        }
    }

    /// Drops Glob/Grep results a deny rule covers.
    fn keep_filter(&self, via: ToolName) -> impl Fn(&Path) -> bool + Send + 'static {
        let rules = self.permissions.rules().clone();
        let policy = self.permissions.policy().clone();
        move |p: &Path| {
            rules
                .denies_file(via, &p.to_string_lossy(), &policy)
                .is_none()
        }
    }
}

impl Host for ToolGlue<'_> {
    async fn available(&mut self) -> wasmtime::Result<Vec<ToolInfo>> {
        let samples = [
            ToolCall::read("file"),
            ToolCall::write("file", ""),
            ToolCall::edit("file", "a", "b"),
            ToolCall::glob("*", None),
            ToolCall::grep("x", None),
            ToolCall::bash("true"),
        ];
        let redactor = self.redactor();
        Ok(samples
            .iter()
            .map(|call| {
                let decision = self.permissions.decide(call);
                ToolInfo {
                    name: call.display_name().to_string(),
                    verdict: match &decision {
                        Decision::Allow { .. } => Verdict::Allowed,
                        Decision::Ask { .. } => Verdict::Asks,
                        Decision::Deny { .. } => Verdict::Denied,
                    },
                    reason: redactor.apply(decision.reason()).into_owned(),
                }
            })
            .collect())
    }

    async fn read(
        &mut self,
        file_path: String,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<ReadOutput, GuestError> {
        let call = ToolCall::Read(ReadInput {
            file_path,
            offset,
            limit,
        });
        let ToolCall::Read(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let tools = self.toolbox();
        let done = blocking_tool(move || {
            tools.read(&input).map(|o| ReadOutput {
                content: o.content,
                lines: o.lines,
                next_offset: o.next_offset,
                truncated: o.truncated,
            })
        })
        .await;
        self.redacted(done)
    }

    async fn write(&mut self, file_path: String, content: String) -> Result<(), GuestError> {
        let call = ToolCall::Write(WriteInput { file_path, content });
        let ToolCall::Write(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let (tools, budget) = (self.toolbox(), self.disk_budget());
        let done =
            blocking_tool(move || tools.write_within(&input, Some(&budget)).map(|_| ())).await;
        // The tool measured its own directory, not the tree's count.
        self.fixed.budget.disk().note_unseen();
        self.redacted(done)
    }

    async fn edit(
        &mut self,
        file_path: String,
        old_string: String,
        new_string: String,
        replace_all: bool,
    ) -> Result<u64, GuestError> {
        let call = ToolCall::Edit(EditInput {
            file_path,
            old_string,
            new_string,
            replace_all: Some(replace_all),
        });
        let ToolCall::Edit(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let (tools, budget) = (self.toolbox(), self.disk_budget());
        let done = blocking_tool(move || {
            tools
                .edit_within(&input, Some(&budget))
                .map(|o| o.replacements as u64)
        })
        .await;
        self.fixed.budget.disk().note_unseen();
        self.redacted(done)
    }

    async fn glob(
        &mut self,
        pattern: String,
        path: Option<String>,
    ) -> Result<Vec<String>, GuestError> {
        let call = ToolCall::Glob(GlobInput { pattern, path });
        let ToolCall::Glob(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let (tools, keep) = (self.toolbox(), self.keep_filter(ToolName::Glob));
        let done = blocking_tool(move || tools.glob(&input, &keep).map(|o| o.paths)).await;
        self.redacted(done)
    }

    async fn grep(
        &mut self,
        pattern: String,
        path: Option<String>,
        glob: Option<String>,
        mode: GrepMode,
        case_insensitive: bool,
    ) -> Result<GrepOutput, GuestError> {
        let call = ToolCall::Grep(GrepInput {
            pattern,
            path,
            glob,
            output_mode: Some(
                match mode {
                    GrepMode::Content => "content",
                    GrepMode::FilesWithMatches => "files_with_matches",
                    GrepMode::Count => "count",
                }
                .to_string(),
            ),
            case_insensitive: Some(case_insensitive),
            ..GrepInput::default()
        });
        let ToolCall::Grep(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let (tools, keep) = (self.toolbox(), self.keep_filter(ToolName::Grep));
        let done = blocking_tool(move || {
            tools.grep(&input, &keep).map(|o| GrepOutput {
                text: o.text,
                files: o.files,
                matches: o.matches,
                truncated: o.truncated,
            })
        })
        .await;
        self.redacted(done)
    }

    async fn bash(
        &mut self,
        command: String,
        timeout_ms: Option<u64>,
    ) -> Result<BashOutput, GuestError> {
        let call = ToolCall::Bash(BashInput {
            command,
            timeout: timeout_ms,
        });
        let ToolCall::Bash(input) = self.authorize(call).await? else {
            return Err(changed_tool().into());
        };
        let confinement = Confinement::for_mode(self.permissions.mode());
        let tools = self.toolbox();
        if let Some(network) = &self.tools.network {
            // A teammate with a network gets it from its first Bash call;
            // a network it cannot have is told, not run without.
            network.ready(&tools).map_err(|why| {
                WitError::Unavailable(format!(
                    "the teammate's network could not be set up ({why}); the command was not run"
                ))
            })?;
        }
        // Bash writes straight to the directory: the tree's disk is measured
        // before the call (no file of it may grow past what is left), while
        // it runs (its process group is killed when the directories pass the
        // budget) and after it. A breach traps, which fails the teammate
        // naming the limit.
        let meter = self.fixed.budget.disk().clone();
        let before = meter.measure().await;
        if let Some(breach) = meter.budget().breach(&before) {
            return Err(GuestError::trap(wasmtime::Error::msg(breach)));
        }
        let room = meter.room();
        let watching = meter.clone();
        let done = blocking_tool(move || {
            let mut next = std::time::Instant::now();
            let mut check = || {
                let started = std::time::Instant::now();
                if started < next {
                    return None;
                }
                let usage = watching.measure_blocking();
                // A slow walk (a big tree) is made less often.
                next = started + started.elapsed() * 9;
                watching.budget().breach(&usage)
            };
            let watch = Watch {
                every: BASH_WATCH_EVERY,
                check: &mut check,
                max_file_bytes: Some(room),
            };
            tools
                .bash_watched(&input, confinement, Some(watch))
                .map(|o| {
                    let stopped = o.stopped.clone();
                    (
                        BashOutput {
                            stdout: o.stdout,
                            stderr: o.stderr,
                            exit_code: o.exit_code,
                            timed_out: o.timed_out,
                            truncated: o.truncated,
                        },
                        stopped,
                    )
                })
        })
        .await;
        if let Ok((_, Some(why))) = &done {
            return Err(GuestError::trap(wasmtime::Error::msg(format!(
                "{why}; the Bash call was stopped while it ran"
            ))));
        }
        if let Some(network) = &self.tools.network {
            let network = network.clone();
            // A small relaxed write: off the async threads.
            let _ = tokio::task::spawn_blocking(move || network.keep_record()).await;
        }
        let usage = meter.measure().await;
        // Whatever the call left running may still write: the turn's end
        // measures again.
        meter.note_unseen();
        if let Some(breach) = meter.budget().breach(&usage) {
            return Err(GuestError::trap(wasmtime::Error::msg(breach)));
        }
        let done = done.map(|(out, _)| out);
        self.redacted(done)
    }
}

/// `e` with its message passed through `r`.
fn redact_with(r: &Redactor, e: WitError) -> WitError {
    let clean = |m: String| r.apply(&m).into_owned();
    match e {
        WitError::Denied(m) => WitError::Denied(clean(m)),
        WitError::NotFound(m) => WitError::NotFound(clean(m)),
        WitError::Conflict(m) => WitError::Conflict(clean(m)),
        WitError::Invalid(m) => WitError::Invalid(clean(m)),
        WitError::Unavailable(m) => WitError::Unavailable(clean(m)),
    }
}

/// The strings of `call` the guest spelled that may name a path.
fn spelled(call: &ToolCall) -> Vec<String> {
    let some = |o: &Option<String>| o.iter().cloned().collect::<Vec<_>>();
    match call {
        ToolCall::Read(i) => vec![i.file_path.clone()],
        ToolCall::Write(i) => vec![i.file_path.clone()],
        ToolCall::Edit(i) => vec![i.file_path.clone()],
        ToolCall::Glob(i) => [vec![i.pattern.clone()], some(&i.path)].concat(),
        ToolCall::Grep(i) => [some(&i.path), some(&i.glob)].concat(),
        ToolCall::Bash(i) => vec![i.command.clone()],
        _ => Vec::new(),
    }
}

/// The lead's updated input named another tool: never run it.
fn changed_tool() -> WitError {
    WitError::Invalid("the approved input is for a different tool; nothing was run".into())
}
