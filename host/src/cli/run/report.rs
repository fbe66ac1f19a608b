//! The live event lines: [`Log`] prints one timestamped line per event, and
//! the [`Reporter`] follows the host's events (turns, state changes, task
//! changes) and, when this process is the lead's, consumes and prints the
//! lead's messages.

use std::collections::BTreeMap;
use std::time::Instant;

use tokio::sync::{broadcast, mpsc};

use crate::embed::{Event, Host, TeammateState};
use crate::protocol::describe::{describe, printable_line};
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
    Line(String, String),
    Stop,
}

impl Reporter {
    /// Starts the reporter; `lead`: the lead whose inbox this process
    /// consumes, `None` when the lead runs elsewhere.
    pub(super) fn start(host: &Host, team: &Team, lead: Option<&str>, log: Log) -> Reporter {
        let events = host.events();
        let (cmds, rx) = mpsc::unbounded_channel();
        let state = ReportState {
            team: team.clone(),
            lead: lead.map(str::to_string),
            log,
            tasks: BTreeMap::new(),
            turns: BTreeMap::new(),
        };
        let join = tokio::spawn(state.run(events, rx));
        Reporter { cmds, join }
    }

    /// Prints a line of the run itself once the events sent so far are printed.
    pub(super) fn line(&self, who: &str, what: impl Into<String>) {
        let _ = self.cmds.send(Cmd::Line(who.into(), what.into()));
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

/// The reporter's memory. Its store reads are small files; it reads them on
/// the runtime thread it runs on.
struct ReportState {
    team: Team,
    /// The lead whose inbox this process consumes (`None`: not ours).
    lead: Option<String>,
    log: Log,
    /// Last seen `(status, owner)` of every task.
    tasks: BTreeMap<String, (String, Option<String>)>,
    turns: BTreeMap<String, u64>,
}

impl ReportState {
    async fn run(
        mut self,
        mut events: broadcast::Receiver<Event>,
        mut cmds: mpsc::UnboundedReceiver<Cmd>,
    ) {
        self.tasks_changed(true);
        loop {
            tokio::select! {
                biased;
                cmd = cmds.recv() => {
                    self.catch_up(&mut events);
                    match cmd {
                        Some(Cmd::Line(who, what)) => self.log.line(&who, what),
                        Some(Cmd::Stop) | None => break,
                    }
                }
                e = events.recv() => match e {
                    Ok(e) => self.handle(e),
                    Err(broadcast::error::RecvError::Lagged(n)) => self.lagged(n),
                    Err(broadcast::error::RecvError::Closed) => break,
                },
            }
        }
        self.lead_messages();
    }

    /// Handles every event already in the channel.
    fn catch_up(&mut self, events: &mut broadcast::Receiver<Event>) {
        loop {
            match events.try_recv() {
                Ok(e) => self.handle(e),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.lagged(n),
                Err(_) => return,
            }
        }
    }

    fn lagged(&self, n: u64) {
        self.log.line(
            "run",
            format!("({n} event(s) missed: the output fell behind)"),
        );
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::TurnStarted { team, name, kind } if team == self.team.name() => {
                let n = self.turns.entry(name.clone()).or_default();
                *n += 1;
                self.log.line(&name, format!("turn {n}: {kind}"));
            }
            Event::StateChanged { team, name, state } if team == self.team.name() => {
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
            Event::TasksChanged { team } if team == self.team.name() => self.tasks_changed(false),
            Event::InboxChanged { team, agent }
                if team == self.team.name() && self.lead.as_ref() == Some(&agent) =>
            {
                self.lead_messages()
            }
            _ => {}
        }
    }

    /// Prints every task whose status or owner changed since last time.
    fn tasks_changed(&mut self, quiet: bool) {
        let tasks = match self.team.list_tasks() {
            Ok(t) => t,
            Err(e) => return self.log.line("run", format!("cannot read the tasks: {e}")),
        };
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

    /// Consumes the lead's unread messages (they move to its history) and
    /// prints one line each.
    fn lead_messages(&mut self) {
        let Some(lead) = &self.lead else { return };
        match self.team.take_unread(lead) {
            Ok(messages) => {
                for m in messages {
                    self.log
                        .line(&m.from, format!("→ {lead}: {}", readable(&m)));
                }
            }
            Err(e) => self
                .log
                .line("run", format!("cannot read {lead}'s inbox: {e}")),
        }
    }
}

/// The longest failure reason [`reason_line`] prints, in characters.
pub(super) const REASON_MAX: usize = 1000;

/// A teammate's failure reason on one line, made inert like [`one_line`]
/// but cut later ([`REASON_MAX`]): a crash reason carries the guest's last
/// words and its log file, which a cut at [`one_line`]'s length would lose.
pub(super) fn reason_line(why: &str) -> String {
    let flat = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = printable_line(&flat).into_owned();
    match flat.char_indices().nth(REASON_MAX) {
        Some((cut, _)) => format!("{} …", &flat[..cut]),
        None => flat,
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
