//! Starting a sub-agent, in named steps (checks, definition, what it may
//! have, name, counts, model client, worktree, instance, task), and the
//! other [`SubagentHost`] calls the glue makes on a [`Seat`]. Above the
//! seat and the driver: it builds the child through the seat and hands it
//! to the driver's task.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::child::{lock, Child, ChildState, Command};
use super::seat::Seat;
use super::{driver, narrow};
use crate::model::ModelClient;
use crate::runtime::subagent_host::{
    BoxFuture, Caller, StartRequest, Started, SubagentContext, SubagentError, SubagentHost,
    SubagentInfo, SubagentStatus,
};
use crate::teammate::Definition;

/// What a start asks for once its definition is applied.
struct Wanted {
    def: Option<Definition>,
    background: bool,
    worktree: bool,
    mode: crate::sandbox::PermissionMode,
    rules: crate::sandbox::ToolRules,
    /// A fork of the caller: what it goes on from.
    fork: Option<Fork>,
}

/// What a fork starts from: its parent's system prompt and conversation.
struct Fork {
    system: Option<String>,
    messages: Vec<crate::model::types::Message>,
}

/// What a fork's conversation says of the calls of its parent's last
/// answer (the `Agent` call that started it among them): the same for
/// every fork of one answer, so their requests share the parent's prefix.
pub const FORK_PLACEHOLDER: &str = "Forked: this call started a fork of this conversation. \
Its result goes to the original conversation, not to the fork.";

/// The fork's first message: who it is and its task.
fn fork_directive(parent: &str, prompt: &str) -> String {
    format!(
        "You are a fork of {parent}: the conversation above is {parent}'s, up to the call that \
         started you. Do only the task below, yourself, with your tools (do not start \
         sub-agents), and answer with its result, complete and concise: that answer is what \
         {parent} gets back.\n\nTask: {prompt}"
    )
}

/// A start counted against the limits: its number and depth.
struct Counted {
    n: usize,
    depth: u32,
}

impl Seat {
    async fn start_inner(
        &self,
        caller: Caller,
        req: StartRequest,
    ) -> Result<Started, SubagentError> {
        let depth = self.check_room(&req)?;
        let wanted = self.wanted(&caller, &req)?;
        if let Some(name) = &req.name {
            self.check_name(name).await?;
        }
        let counted = self.count_start(depth)?;
        let background = wanted.background;
        let prompt = match wanted.fork.is_some() {
            true => fork_directive(&self.cfg.identity.name, &req.prompt),
            false => req.prompt.clone(),
        };
        let (child, rx) = self.child(&req, wanted, counted).await?;
        self.launch(child, rx, background, prompt).await
    }

    /// The prompt is not empty, the child is not too deep, and the owner
    /// runs fewer than `max_running`. Returns the child's depth.
    fn check_room(&self, req: &StartRequest) -> Result<u32, SubagentError> {
        if req.prompt.trim().is_empty() {
            return Err(SubagentError::Invalid(
                "the sub-agent's prompt is empty".into(),
            ));
        }
        let depth = self.cfg.depth + 1;
        let lim = self.cfg.limits_sub;
        if depth > lim.max_depth {
            return Err(SubagentError::Denied(format!(
                "a sub-agent at depth {depth} is deeper than the host allows ({}, max_depth): do this work yourself",
                lim.max_depth
            )));
        }
        if self.running() >= lim.max_running {
            return Err(SubagentError::Denied(format!(
                "{} sub-agents already run (max_running {}): wait for one to finish",
                self.running(),
                lim.max_running
            )));
        }
        Ok(depth)
    }

    /// The definition it names, and what it may have: at most the parent
    /// (`narrow`). With the fork path on (`Definitions::forks`), a start
    /// that names no `subagent_type` is a fork of the caller: its model,
    /// mode and tools, in the background, going on from its conversation.
    fn wanted(&self, caller: &Caller, req: &StartRequest) -> Result<Wanted, SubagentError> {
        if req.subagent_type.is_none() && self.cfg.definitions.forks() {
            return self.fork(caller, req);
        }
        let def = match req.subagent_type.as_deref() {
            None | Some("general-purpose") => None,
            Some(t) => Some(self.cfg.definitions.get(t).cloned().ok_or_else(|| {
                let names = self.cfg.definitions.names();
                SubagentError::NotFound(format!(
                    "there is no agent definition {t:?}; the host knows: general-purpose{}{}",
                    if names.is_empty() { "" } else { ", " },
                    names.join(", ")
                ))
            })?),
        };
        let asked_mode = req
            .mode
            .as_deref()
            .or(def.as_ref().and_then(|d| d.permission_mode.as_deref()));
        let mode = narrow::mode(asked_mode, caller.mode).map_err(SubagentError::Denied)?;
        let rules = narrow::rules(&caller.rules, def.as_ref().and_then(|d| d.tools.as_deref()))
            .map_err(SubagentError::Invalid)?;
        Ok(Wanted {
            background: req.background || def.as_ref().is_some_and(|d| d.background),
            worktree: req.worktree || def.as_ref().is_some_and(|d| d.worktree),
            def,
            mode,
            rules,
            fork: None,
        })
    }

    /// A fork of the caller: never from a fork, and only from a caller
    /// with a conversation kept (it goes on from that). Never more than the
    /// caller: its mode (or a narrower one asked for), its tools exactly,
    /// its model; always in the background, as the reference's.
    fn fork(&self, caller: &Caller, req: &StartRequest) -> Result<Wanted, SubagentError> {
        if self.cfg.forked {
            return Err(SubagentError::Denied(
                "a fork cannot fork again: do this work yourself, or start a named sub-agent \
                 (subagent_type)"
                    .into(),
            ));
        }
        let (system, messages) = self.cfg.client.fork_context().ok_or_else(|| {
            SubagentError::Denied(
                "a fork goes on from its parent's conversation, and this agent has none kept \
                 (no model call yet, or no model): name a subagent_type instead"
                    .into(),
            )
        })?;
        let mode = narrow::mode(req.mode.as_deref(), caller.mode).map_err(SubagentError::Denied)?;
        let rules = narrow::rules(&caller.rules, None).map_err(SubagentError::Invalid)?;
        Ok(Wanted {
            def: None,
            background: true,
            worktree: req.worktree,
            mode,
            rules,
            fork: Some(Fork { system, messages }),
        })
    }

    /// A name is not a sibling's, not a member's of the team (said first,
    /// the plainest reason), a new member's name (nothing that looks like
    /// the lead, the person, the host or a flag), and not like a member's.
    async fn check_name(&self, name: &str) -> Result<(), SubagentError> {
        let invalid =
            |e: crate::error::Error| SubagentError::Invalid(format!("sub-agent name: {e}"));
        if self.find(name).is_some() {
            return Err(SubagentError::Invalid(format!(
                "a sub-agent named {name:?} exists already; pick another name"
            )));
        }
        let team = self.cfg.team().clone();
        let config = crate::blocking::try_run("reading the team", move || team.config())
            .await
            .ok();
        if config.as_ref().is_some_and(|c| c.member(name).is_some()) {
            return Err(SubagentError::Invalid(format!(
                "{name:?} is a member of the team; a sub-agent's name must not be one"
            )));
        }
        crate::store::names::check_new_member_name(name).map_err(invalid)?;
        let members = config.iter().flat_map(|c| c.members.iter());
        crate::store::names::check_distinct(name, members.map(|m| m.name.as_str())).map_err(invalid)
    }

    /// Counts the start against the owner's `max_total` and the tree's one
    /// life-long count; a start that fails later (its instance does not
    /// fit, say) stays counted, so a loop of failing starts ends too.
    fn count_start(&self, depth: u32) -> Result<Counted, SubagentError> {
        let n = self.started.fetch_add(1, Ordering::SeqCst);
        if n >= self.cfg.limits_sub.max_total {
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Err(SubagentError::Denied(format!(
                "this agent already started {} sub-agents (max_total): no more in its life",
                self.cfg.limits_sub.max_total
            )));
        }
        if let Err(e) = self.cfg.budget.start_subagent() {
            self.started.fetch_sub(1, Ordering::SeqCst);
            return Err(SubagentError::Denied(e));
        }
        Ok(Counted { n, depth })
    }

    /// The child's model client (its parent's meter), over a transcript
    /// kept for a resumption; one left by an earlier life of the same id
    /// is not its own.
    fn client(
        &self,
        full_name: &str,
        req: &StartRequest,
        def: Option<&Definition>,
        fork: bool,
    ) -> Result<(ModelClient, crate::model::Transcript), SubagentError> {
        // A fork inherits its parent's model (its requests keep the
        // parent's prefix).
        let model = req
            .model
            .as_deref()
            .or(def.and_then(|d| d.model.as_deref()))
            .filter(|m| *m != "inherit" && !fork);
        let transcript =
            crate::home::kept::conversation(&self.cfg.home, self.cfg.team().name(), full_name)
                .map(crate::model::Transcript::at)
                .map_err(|e| SubagentError::Unavailable(e.to_string()))?;
        let _ = transcript.remove();
        let client = self
            .cfg
            .client
            .sub_agent(full_name, model, Some(transcript.clone()))
            .map_err(SubagentError::Denied)?;
        Ok((client, transcript))
    }

    /// Its own git worktree of the owner's directory, named after it.
    async fn worktree(&self, full_name: &str) -> Result<PathBuf, SubagentError> {
        let (home, team, name, dir) = (
            self.cfg.home.clone(),
            self.cfg.team().name().to_string(),
            full_name.to_string(),
            self.cfg.dir.clone(),
        );
        crate::blocking::try_run("worktree creation", move || {
            crate::worktree::create_from(&home, &team, &name, &dir)
        })
        .await
        .map_err(|e| match e {
            crate::Error::Worktree(m) | crate::Error::Encode(m) => SubagentError::Denied(m),
            other => SubagentError::Unavailable(other.to_string()),
        })
    }

    /// The child's record: who it is, what it is made of, where it works.
    async fn child(
        &self,
        req: &StartRequest,
        wanted: Wanted,
        counted: Counted,
    ) -> Result<(Arc<Child>, mpsc::UnboundedReceiver<Command>), SubagentError> {
        let id = self.id_for(counted.n + 1);
        let full_name = format!("{}.{id}", self.cfg.identity.name);
        let def = wanted.def.as_ref();
        let (client, transcript) = self.client(&full_name, req, def, wanted.fork.is_some())?;
        let fork_system = match wanted.fork {
            Some(fork) => Some(seed(&transcript, fork).await?),
            None => None,
        };
        let worktree = if wanted.worktree {
            Some(self.worktree(&full_name).await?)
        } else {
            None
        };
        let (commands, rx) = mpsc::unbounded_channel();
        let child = Arc::new(Child {
            id,
            name: req.name.clone(),
            description: req.description.clone(),
            subagent_type: match (&fork_system, def) {
                (Some(_), _) => "fork".to_string(),
                (None, Some(d)) => d.name.clone(),
                (None, None) => "general-purpose".to_string(),
            },
            depth: counted.depth,
            dir: worktree.clone().unwrap_or_else(|| self.cfg.dir.clone()),
            worktree,
            tool_use_id: req.tool_use_id.clone(),
            full_name,
            parent: self.cfg.identity.name.clone(),
            forked: fork_system.is_some(),
            system_prompt: match fork_system {
                Some(parent_s) => parent_s,
                None => def
                    .map(|d| d.prompt.clone())
                    .filter(|p| !p.trim().is_empty()),
            },
            client,
            component: def
                .and_then(|d| d.component.clone())
                .unwrap_or_else(|| self.cfg.component.clone()),
            mode: wanted.mode,
            rules: wanted.rules,
            transcript,
            state: Mutex::new(ChildState {
                status: SubagentStatus::Running,
                output: String::new(),
                duration_ms: 0,
                notify: wanted.background,
            }),
            finished: watch::channel(0).0,
            commands,
            tool_uses: AtomicU32::new(0),
            reported: Mutex::new(String::new()),
        });
        Ok((child, rx))
    }

    /// Builds its instance (its worktree goes again when that fails),
    /// registers it, starts its task, and for a synchronous start waits
    /// for its end.
    async fn launch(
        &self,
        child: Arc<Child>,
        rx: mpsc::UnboundedReceiver<Command>,
        background: bool,
        prompt: String,
    ) -> Result<Started, SubagentError> {
        let (instance, own) = match self.instantiate(&child).await {
            Ok(made) => made,
            Err(e) => {
                if let Some(wt) = &child.worktree {
                    let (home, wt) = (self.cfg.home.clone(), wt.clone());
                    let _ = tokio::task::spawn_blocking(move || {
                        crate::worktree::remove_if_clean(&home, &wt)
                    })
                    .await;
                }
                return Err(e);
            }
        };
        lock(&self.children).push(child.clone());
        // Counted before its task can end it; from here a caller that goes
        // away (its own turn killed) takes it along.
        self.cfg.tree.started(child.depth);
        let mut done = child.finished.subscribe();
        let guard = (!background).then(|| KillOnDrop(Some(child.clone())));
        tokio::spawn(driver::drive(driver::Drive {
            instance,
            own,
            child: child.clone(),
            parent: self.this.clone(),
            rx,
            prompt,
            home: self.cfg.home.clone(),
            tree: self.cfg.tree.clone(),
        }));
        self.cfg.tree.saved().await;
        if background {
            return Ok(Started::Launched(child.info()));
        }
        // Synchronous: wait for its end.
        let _ = done.wait_for(|n| *n >= 1).await;
        if let Some(mut g) = guard {
            g.0 = None;
        }
        Ok(Started::Finished(child.info()))
    }
}

/// Writes a fork's starting conversation into its `transcript` (which its
/// guest reads back through `model.history`): its parent's, each call of
/// the parent's last answer answered with [`FORK_PLACEHOLDER`]. Returns the
/// parent's system prompt.
async fn seed(
    transcript: &crate::model::Transcript,
    fork: Fork,
) -> Result<Option<String>, SubagentError> {
    let Fork {
        system,
        mut messages,
    } = fork;
    crate::model::transcript::answer_calls(&mut messages, FORK_PLACEHOLDER, false);
    let t = transcript.clone();
    crate::blocking::run("seeding a fork", move || t.replace(messages))
        .await
        .map_err(|e| SubagentError::Unavailable(e.to_string()))?
        .map_err(SubagentError::Unavailable)?;
    Ok(system)
}

/// Kills a synchronous sub-agent whose caller stopped waiting.
struct KillOnDrop(Option<Arc<Child>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let _ = c.commands.send(Command::Kill { parent_gone: true });
        }
    }
}

impl SubagentHost for Seat {
    fn start(
        &self,
        caller: Caller,
        req: StartRequest,
    ) -> BoxFuture<'_, Result<Started, SubagentError>> {
        Box::pin(self.start_inner(caller, req))
    }

    fn knows(&self, to: &str) -> bool {
        self.find(to).is_some()
    }

    fn send(&self, to: &str, message: String) -> Result<SubagentInfo, SubagentError> {
        let child = self.find(to).ok_or_else(|| {
            SubagentError::NotFound(format!("this agent has no sub-agent {to:?}"))
        })?;
        child
            .commands
            .send(Command::Message(message))
            .map_err(|_| {
                SubagentError::NotFound(format!(
                    "sub-agent {} has ended for good (stopped, or its instance is gone); start a new one",
                    child.id
                ))
            })?;
        Ok(child.info())
    }

    fn output(&self, id: &str) -> Result<SubagentInfo, SubagentError> {
        self.find(id)
            .map(|c| c.info())
            .ok_or_else(|| SubagentError::NotFound(format!("this agent has no sub-agent {id:?}")))
    }

    fn stop(&self, id: &str) -> Result<SubagentInfo, SubagentError> {
        let child = self.find(id).ok_or_else(|| {
            SubagentError::NotFound(format!("this agent has no sub-agent {id:?}"))
        })?;
        if !child.is_running() {
            return Err(SubagentError::Invalid(format!(
                "sub-agent {} is not running (it is {})",
                child.id,
                lock(&child.state).status.as_str()
            )));
        }
        let _ = child.commands.send(Command::Kill { parent_gone: false });
        Ok(child.info())
    }

    fn wait(
        &self,
        id: &str,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<SubagentInfo, SubagentError>> {
        let found = self
            .find(id)
            .ok_or_else(|| SubagentError::NotFound(format!("this agent has no sub-agent {id:?}")));
        Box::pin(async move {
            let child = found?;
            let mut ended = child.finished.subscribe();
            if child.is_running() {
                let seen = *ended.borrow_and_update();
                let _ = tokio::time::timeout(timeout, ended.wait_for(|n| *n > seen)).await;
            }
            Ok(child.info())
        })
    }

    fn list(&self) -> Vec<SubagentInfo> {
        lock(&self.children).iter().map(|c| c.info()).collect()
    }

    fn context(&self) -> Option<SubagentContext> {
        self.me.as_ref().map(|c| SubagentContext {
            id: c.id.clone(),
            parent: c.parent.clone(),
            system_prompt: c.system_prompt.clone(),
            depth: c.depth,
        })
    }

    fn report(&self, text: String) {
        if let Some(c) = &self.me {
            *lock(&c.reported) = text;
        }
    }

    fn count_tool_use(&self) {
        if let Some(c) = &self.me {
            c.tool_uses.fetch_add(1, Ordering::Relaxed);
        }
    }
}
