//! The live event lines: [`Log`] prints one timestamped line per event, and
//! the [`Reporter`] follows the host's events (turns, state changes, task
//! changes) and, when this process is the lead's, consumes and prints the
//! lead's messages.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use tokio::sync::{broadcast, mpsc};

use crate::embed::{Event, Host, TeammateState};
use crate::protocol::describe::{describe, printable_line, reason_line};
use crate::protocol::{Parsed, ProtocolMessage};
use crate::store::{InboxMessage, Team};

/// Prints event lines: `+  1.234s  who        what`. Each event is one
/// line: `who` and `what` go through [`printable_line`], so nothing a
/// teammate wrote (a subject, a name, a reason) can start a line of its own.
#[derive(Debug, Clone)]
pub(super) struct Log {
    pub(super) start: Instant,
    /// With `--json` the lines go to stderr, keeping stdout one document.
    pub(super) stderr: bool,
    pub(super) width: usize,
    /// A copy of every line printed, when set (for tests).
    pub(super) kept: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

impl Log {
    pub(super) fn line(&self, who: &str, what: impl AsRef<str>) {
        let t = self.start.elapsed().as_secs_f64();
        let line = format!(
            "+{t:7.3}s  {:<w$}  {}",
            printable_line(who),
            printable_line(what.as_ref()),
            w = self.width
        );
        if let Some(kept) = &self.kept {
            kept.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(line.clone());
        }
        // A reader gone away (`| head`) must not stop the run: the lines
        // are only a view of it.
        use std::io::Write;
        let _ = if self.stderr {
            writeln!(std::io::stderr(), "{line}")
        } else {
            writeln!(std::io::stdout(), "{line}")
        };
    }
}

/// A task that follows the host's events: prints turns, state changes, task
/// changes, and consumes and prints the lead's messages (unless the lead is
/// elsewhere: `run --join`). The run's own lines
/// go through it too ([`Reporter::line`]), after every event already sent, so
/// the output reads in the order things happened.
pub(super) struct Reporter {
    cmds: mpsc::UnboundedSender<Cmd>,
    join: tokio::task::JoinHandle<()>,
}

enum Cmd {
    /// A line of the run's own, and when it was asked for.
    Line(SystemTime, String, String),
    Stop,
}

impl Reporter {
    /// Starts the reporter; `lead`: the lead whose inbox this process
    /// consumes, `None` when the lead runs elsewhere.
    pub(super) fn start(host: &Host, team: &Team, lead: Option<&str>, log: Log) -> Reporter {
        let events = host.events();
        let (cmds, rx) = mpsc::unbounded_channel();
        let (items, stamped) = mpsc::unbounded_channel();
        let mut state = ReportState {
            team: team.clone(),
            lead: lead.map(str::to_string),
            log,
            tasks: BTreeMap::new(),
            turns: BTreeMap::new(),
            held: Vec::new(),
            states: BTreeMap::new(),
            host: Some(host.clone()),
        };
        // What the tasks are before any event: each change is shown
        // against it.
        state.tasks_changed(true);
        tokio::spawn(stamp(events, rx, items));
        // On a blocking-pool thread: its store reads are synchronous, and
        // one that does not return (a store that does not answer) must not
        // hold a runtime worker the run's own stop needs.
        let rt = tokio::runtime::Handle::current();
        let join = tokio::task::spawn_blocking(move || rt.block_on(state.run(stamped)));
        Reporter { cmds, join }
    }

    /// Prints a line of the run itself once the events sent so far are printed.
    pub(super) fn line(&self, who: &str, what: impl Into<String>) {
        let _ = self
            .cmds
            .send(Cmd::Line(SystemTime::now(), who.into(), what.into()));
    }

    /// Handles the events already sent, takes what is left in the lead's
    /// inbox (when it is this process's), and ends.
    pub(super) async fn stop(self) {
        let _ = self.cmds.send(Cmd::Stop);
        if let Err(e) = self.join.await {
            tracing::error!(error = %e, "the event reporter panicked");
        }
    }
}

/// What the reporter prints, in order.
enum Item {
    /// An event and when it was received.
    Event(SystemTime, Event),
    Lagged(u64),
    Cmd(Cmd),
}

/// Receives the host's events as they are sent, and stamps each with the
/// time (a task that does nothing else, so the stamp is the time of the
/// event); a line of the run's own follows every event already sent.
async fn stamp(
    mut events: broadcast::Receiver<Event>,
    mut cmds: mpsc::UnboundedReceiver<Cmd>,
    items: mpsc::UnboundedSender<Item>,
) {
    loop {
        let item = tokio::select! {
            biased;
            e = events.recv() => match e {
                Ok(e) => Item::Event(SystemTime::now(), e),
                Err(broadcast::error::RecvError::Lagged(n)) => Item::Lagged(n),
                Err(broadcast::error::RecvError::Closed) => Item::Cmd(Cmd::Stop),
            },
            cmd = cmds.recv() => {
                loop {
                    let item = match events.try_recv() {
                        Ok(e) => Item::Event(SystemTime::now(), e),
                        Err(broadcast::error::TryRecvError::Lagged(n)) => Item::Lagged(n),
                        Err(_) => break,
                    };
                    let _ = items.send(item);
                }
                Item::Cmd(cmd.unwrap_or(Cmd::Stop))
            }
        };
        let last = matches!(item, Item::Cmd(Cmd::Stop));
        if items.send(item).is_err() || last {
            return;
        }
    }
}

/// The reporter's memory. Its store reads are small files (or a server's
/// answers); it reads them on the blocking-pool thread it runs on.
struct ReportState {
    team: Team,
    /// The lead whose inbox this process consumes (`None`: not ours).
    lead: Option<String>,
    log: Log,
    /// Last seen `(status, owner)` of every task.
    tasks: BTreeMap<String, (String, Option<String>)>,
    turns: BTreeMap<String, u64>,
    /// What was written after the event being printed, by its time of
    /// writing: the lead's messages (the inbox is read when its event is
    /// printed, and may by then hold what a later turn wrote) and the tasks
    /// a pass of this process wrote (stamped at the write, as messages
    /// are). Each waits for the first event received after it was written,
    /// so it never prints before the turn that wrote it, and messages and
    /// task changes print in the order they were written.
    held: Vec<(SystemTime, Held)>,
    /// The last state an event gave each teammate.
    states: BTreeMap<String, TeammateState>,
    /// The host whose teammates' final states close the stream
    /// ([`ReportState::finish_states`]); `None` in unit tests.
    host: Option<Host>,
}

/// Something written, waiting in [`ReportState::held`].
enum Held {
    /// A message to the lead (boxed: the tasks variant is small).
    Message(Box<InboxMessage>),
    /// The tasks one pass wrote, as written.
    Tasks(Vec<crate::store::Task>),
}

impl ReportState {
    async fn run(mut self, mut items: mpsc::UnboundedReceiver<Item>) {
        while let Some(item) = items.recv().await {
            match item {
                Item::Event(at, e) => {
                    self.release(at);
                    self.handle(e, at);
                }
                Item::Lagged(n) => self.lagged(n),
                Item::Cmd(Cmd::Line(at, who, what)) => {
                    self.release(at);
                    self.log.line(&who, what)
                }
                Item::Cmd(Cmd::Stop) => break,
            }
        }
        self.take_lead_messages();
        self.release(SystemTime::now() + std::time::Duration::from_secs(3600));
        self.finish_states();
    }

    /// Prints the end of every teammate of this host that finished without
    /// its event being printed. A runner records a state before it
    /// broadcasts it, so a run that saw every teammate stop can ask the
    /// reporter to stop before the last `stopped` event is sent; the state
    /// is there all the same, and the stream never ends without it.
    fn finish_states(&mut self) {
        let Some(host) = self.host.clone() else {
            return;
        };
        for t in host.teammates(self.team.name()) {
            if t.state.is_finished() && self.states.get(&t.name) != Some(&t.state) {
                self.handle(
                    Event::StateChanged {
                        team: t.team,
                        name: t.name,
                        state: t.state,
                    },
                    SystemTime::now(),
                );
            }
        }
    }

    fn lagged(&mut self, n: u64) {
        self.log.line(
            "run",
            format!("({n} event(s) missed: the output fell behind)"),
        );
        // One missed may have been the only notice of a message to the
        // lead (this process's own appends are not heard twice): look.
        self.take_lead_messages();
    }

    fn handle(&mut self, event: Event, at: SystemTime) {
        match event {
            Event::TurnStarted { team, name, kind } if team == self.team.name() => {
                let n = self.turns.entry(name.clone()).or_default();
                *n += 1;
                self.log.line(&name, format!("turn {n}: {kind}"));
            }
            Event::StateChanged { team, name, state } if team == self.team.name() => {
                self.states.insert(name.clone(), state.clone());
                match state {
                    // Every turn starts with `active`; the turn line says it.
                    // `compile_all`'s lines say what compiles, for whom,
                    // and when it is ready.
                    TeammateState::Active | TeammateState::Compiling | TeammateState::Starting => {}
                    TeammateState::Failed(why) => self
                        .log
                        .line(&name, format!("failed: {}", reason_line(&why))),
                    s => self.log.line(&name, s.as_str()),
                }
            }
            // Stamped at the write: held and printed in the order of
            // writing, each state the pass wrote (not the list as it is
            // now, which a later pass may have changed again).
            Event::TasksChanged {
                team,
                written: Some(w),
            } if team == self.team.name() => {
                self.held.push((w.at, Held::Tasks(w.tasks)));
                self.release(at);
            }
            // Another process wrote: its state is the list's, read now.
            Event::TasksChanged {
                team,
                written: None,
            } if team == self.team.name() => self.tasks_changed(false),
            Event::LeaseLost { team, by, stopped } if team == self.team.name() => self.log.line(
                "run",
                format!(
                    "this host's lease was taken over by host {by}: {} stopped here without writing",
                    if stopped.is_empty() { "no teammate".to_string() } else { stopped.join(", ") }
                ),
            ),
            Event::InboxChanged { team, agent }
                if team == self.team.name() && self.lead.as_ref() == Some(&agent) =>
            {
                self.take_lead_messages();
                self.release(at);
            }
            _ => {}
        }
    }

    /// Prints every task whose status or owner changed since last time, as
    /// the list reads now.
    fn tasks_changed(&mut self, quiet: bool) {
        let tasks = match self.team.list_tasks() {
            Ok(t) => t,
            // The first, quiet read may come before the team is made (a
            // lead component creates its own): nothing to compare yet.
            Err(_) if quiet => return,
            Err(e) => return self.log.line("run", format!("cannot read the tasks: {e}")),
        };
        self.show_tasks(tasks, quiet);
    }

    /// Prints each of `tasks` whose status or owner differs from the last
    /// seen; remembers them.
    fn show_tasks(&mut self, tasks: Vec<crate::store::Task>, quiet: bool) {
        for t in tasks {
            let now = (t.status.as_str().to_string(), t.owner.clone());
            if self.tasks.get(&t.id) == Some(&now) {
                continue;
            }
            if !quiet {
                let owner = match &t.owner {
                    Some(o) => format!(", owner {o}"),
                    None => String::new(),
                };
                self.log.line(
                    "tasks",
                    format!("#{} {}{owner}: {}", t.id, now.0, t.subject),
                );
            }
            self.tasks.insert(t.id, now);
        }
    }

    /// Consumes the lead's unread messages (they move to its history) into
    /// [`ReportState::held`], each with its time of writing (a message
    /// without a readable one counts as written long ago).
    fn take_lead_messages(&mut self) {
        let Some(lead) = &self.lead else { return };
        match self.team.take_unread(lead) {
            Ok(messages) => {
                for m in messages {
                    let at = chrono::DateTime::parse_from_rfc3339(&m.timestamp)
                        .map_or(SystemTime::UNIX_EPOCH, SystemTime::from);
                    self.held.push((at, Held::Message(Box::new(m))));
                }
            }
            Err(e) => self
                .log
                .line("run", format!("cannot read {lead}'s inbox: {e}")),
        }
    }

    /// Prints what was held and written by `at`, oldest first (a stable
    /// sort: of two written at the same instant, the first received first).
    fn release(&mut self, at: SystemTime) {
        self.held.sort_by_key(|(written, _)| *written);
        let due = self.held.partition_point(|(written, _)| *written <= at);
        for (_, held) in self.held.drain(..due).collect::<Vec<_>>() {
            match held {
                Held::Message(m) => {
                    let lead = self.lead.as_deref().unwrap_or_default();
                    self.log
                        .line(&m.from, format!("→ {lead}: {}", readable(&m)));
                }
                Held::Tasks(tasks) => self.show_tasks(tasks, false),
            }
        }
    }
}

/// One line for a message ([`describe`]), with a hint where `run` cannot help:
/// in line mode nobody answers permission or plan requests.
fn readable(m: &InboxMessage) -> String {
    let line = describe(&m.text);
    match ProtocolMessage::parse(&m.text) {
        Parsed::Protocol(ProtocolMessage::PlanApprovalRequest(_)) => format!(
            "{line} (line mode does not answer plan requests: run on a terminal for the live view, or use `teamhost plan`)"
        ),
        Parsed::Protocol(ProtocolMessage::PermissionRequest(_)) => format!(
            "{line} (line mode does not answer permission requests: run on a terminal for the live view, use `teamhost permit`, or give the teammate a mode or allowed_tools that need no asking)"
        ),
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::store::{
        NewTask, OutgoingMessage, StoreEvent, StoreObserver, TaskStatus, TaskUpdate,
    };

    /// Keeps every store event this process's writes report, in order.
    struct Heard(Mutex<Vec<StoreEvent>>);

    impl StoreObserver for Heard {
        fn changed(&self, event: &StoreEvent) {
            self.0.lock().unwrap().push(event.clone());
        }
    }

    /// Returns once the wall clock has moved to the next millisecond (the
    /// precision of a message's timestamp): two writes either side of it
    /// are stamped apart. A spin on the clock, at most a millisecond.
    fn next_millisecond() {
        let now = crate::protocol::time::now_ms();
        while crate::protocol::time::now_ms() == now {
            std::hint::spin_loop();
        }
    }

    /// The run's event as the wake hub forwards it.
    fn forwarded(event: StoreEvent) -> Event {
        match event {
            StoreEvent::TasksChanged { team, written } => Event::TasksChanged { team, written },
            StoreEvent::InboxAppended { team, agent } | StoreEvent::InboxTaken { team, agent } => {
                Event::InboxChanged { team, agent }
            }
            StoreEvent::ConfigChanged { team } => Event::TasksChanged {
                team,
                written: None,
            },
        }
    }

    #[tokio::test]
    async fn a_task_changed_twice_before_its_events_are_handled_shows_both_states_in_the_order_written(
    ) {
        let (tmp, _) = crate::store::test_team(&["alice"]);
        let heard = Arc::new(Heard(Mutex::new(Vec::new())));
        let team = crate::store::Store::new(tmp.path())
            .with_observer(heard.clone())
            .team("t")
            .unwrap();
        let kept = Arc::new(Mutex::new(Vec::new()));
        let mut state = ReportState {
            team: team.clone(),
            lead: Some("team-lead".into()),
            log: Log {
                start: Instant::now(),
                stderr: true,
                width: 9,
                kept: Some(kept.clone()),
            },
            tasks: BTreeMap::new(),
            turns: BTreeMap::new(),
            held: Vec::new(),
            states: BTreeMap::new(),
            host: None,
        };
        // The reporter has read the list (empty) before the writes, as
        // `Reporter::start` does.
        state.tasks_changed(true);

        // Every write happens before the reporter handles any event: the
        // list then says only `completed`.
        let task = team
            .create_task(NewTask {
                subject: "Write".into(),
                ..Default::default()
            })
            .unwrap();
        next_millisecond();
        let take = TaskUpdate {
            status: Some(TaskStatus::InProgress),
            owner: Some(Some("alice".into())),
            ..Default::default()
        };
        team.update_task(&task.id, take, "alice").unwrap();
        next_millisecond();
        team.deliver("team-lead", OutgoingMessage::new("alice", "on it"))
            .unwrap();
        next_millisecond();
        let done = TaskUpdate {
            status: Some(TaskStatus::Completed),
            ..Default::default()
        };
        team.update_task(&task.id, done, "alice").unwrap();

        let (tx, rx) = mpsc::unbounded_channel();
        for e in heard.0.lock().unwrap().drain(..) {
            tx.send(Item::Event(SystemTime::now(), forwarded(e)))
                .unwrap();
        }
        tx.send(Item::Cmd(Cmd::Stop)).unwrap();
        state.run(rx).await;

        let lines = kept.lock().unwrap().clone();
        let shown: Vec<&str> = lines
            .iter()
            .map(|l| {
                l.split_once("s  ")
                    .map_or(l.as_str(), |(_, rest)| rest)
                    .trim()
            })
            .collect();
        assert_eq!(
            shown,
            [
                "tasks      #1 pending: Write",
                "tasks      #1 in_progress, owner alice: Write",
                "alice      → team-lead: on it",
                "tasks      #1 completed, owner alice: Write",
            ],
            "{lines:#?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_teammate_that_ended_before_its_event_was_heard_still_ends_the_stream() {
        let tmp = tempfile::tempdir().unwrap();
        let host = Host::new(crate::home::Home::new(tmp.path().join("home"))).unwrap();
        host.create_team("t", crate::store::NewTeam::default())
            .unwrap();
        let dir = tmp.path().join("work");
        std::fs::create_dir_all(&dir).unwrap();
        host.spawn(
            "t",
            crate::embed::SpawnRequest::new("ann", teamhost_tests::ECHO, "hi", &dir),
        )
        .await
        .unwrap();
        let report = host
            .shutdown_team("t", "done", std::time::Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(report.stopped, ["ann"]);
        // A reporter that heard none of it (its `stopped` event was sent
        // after the run asked it to stop).
        let kept = Arc::new(Mutex::new(Vec::new()));
        let state = ReportState {
            team: host.team("t").unwrap(),
            lead: None,
            log: Log {
                start: Instant::now(),
                stderr: true,
                width: 9,
                kept: Some(kept.clone()),
            },
            tasks: BTreeMap::new(),
            turns: BTreeMap::new(),
            held: Vec::new(),
            states: BTreeMap::new(),
            host: Some(host.clone()),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(Item::Cmd(Cmd::Stop)).unwrap();
        tokio::task::spawn_blocking(move || {
            tokio::runtime::Handle::current().block_on(state.run(rx))
        })
        .await
        .unwrap();
        let lines = kept.lock().unwrap().clone();
        assert!(
            lines
                .last()
                .is_some_and(|l| l.ends_with("ann        stopped")),
            "{lines:?}"
        );
        // Heard once: not printed again.
        assert_eq!(
            lines.iter().filter(|l| l.contains("stopped")).count(),
            1,
            "{lines:?}"
        );
    }
}
