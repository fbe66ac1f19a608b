//! `leadscript`: a scripted (non-LLM) lead for teamhost's tests of the
//! lead's seat (`teamhost:agent/lead`). Its goal (its first message from
//! `user`, else its first plain message, else a spawned copy's prompt) is a
//! script, one command per line; it runs them in order through `leading`, `tasks` and
//! `messaging`, and prints each result to stdout (the host's guest log,
//! `logs/{team}/team-lead.log`) as one line `CMD\tOK|ERR\tDETAIL`, newlines
//! and tabs in DETAIL turned into spaces. A WIT error reads `denied: …`,
//! `not-found: …`, `conflict: …`, `invalid: …` or `unavailable: …`.
//!
//! | command | does |
//! |---|---|
//! | `create NAME [DESCRIPTION…]` | `leading.create-team` |
//! | `catalogue` | prints the entries' names |
//! | `spawn ENTRY NAME [mode=M] [tools=A,B] [model=X] [budget=USD] [plan-required=yes] PROMPT…` | `leading.spawn` (`\u{HEX}` in NAME is that character: `team-lead\u{20}`) |
//! | `task SUBJECT…` | `tasks.create` |
//! | `task-once SUBJECT…` | `tasks.create`, unless a task with that subject exists (prints its id): a script a lead is given again after its host died does not make its tasks twice |
//! | `wait-request plan\|permission` | waits (ends the turn, looks again next turn) for a waiting request of that kind from a teammate; remembers its id |
//! | `answer-plan approve [MODE]` / `answer-plan reject FEEDBACK…` | answers the remembered plan |
//! | `answer-permission allow\|deny [REASON…]` / `answer-permission allow-input TEXT…` | answers the remembered permission request (`allow-input`: with the replacement input `{"note":TEXT}`) |
//! | `answer-plan-id ID approve [MODE]` / `answer-permission-id ID allow\|deny\|allow-input …` | answers an id given in the script |
//! | `repeat N COMMAND…` | runs COMMAND N times (not a wait) |
//! | `own-plan` | submits a plan itself (`messaging.request-plan-approval`, the lead in plan mode); remembers its id |
//! | `raw-plan NAME approve [MODE]` | answers the remembered plan through `messaging.respond-plan-approval` (the seat's path too) |
//! | `shutdown NAME [REASON…]` / `raw-shutdown NAME` | `leading.shutdown` / `messaging.request-shutdown` |
//! | `wait-gone NAME` | waits until NAME is no longer a teammate |
//! | `wait-message NAME TEXT…` | waits until a plain message from NAME containing TEXT has come |
//! | `teammates` / `pending` | prints them |
//! | `delete` | `leading.delete-team` |
//! | `echo TEXT…` | prints TEXT |
//! | `say NAME TEXT…` | `messaging.send` |
//! | `write PATH TEXT…` | `tools.write` in the lead's own directory (in `default` mode it asks: the lead's own permission request, which the person answers) |
//!
//! | `think N [MAX_TOKENS]` | makes N model calls of its own (`model.complete`, a one-word question, `max-tokens` MAX_TOKENS or the policy's), then prints what it spent and has left (`model.spent`); a refused call prints `ERR` with the model error |
//! | `wait-done` | waits until the task list has tasks and every one is completed |
//! | `wait-reports N` | waits until idle notifications have reported N different tasks completed |
//!
//! A word `big:N` anywhere stands for N `x` characters (the hostile tests'
//! oversized texts).
//!
//! Every idle notification that reports a task completed prints
//! `report\tOK\tID from NAME`, once per notification received.
//!
//! **Across a resume.** The script, its place in it, the remembered ids, the
//! messages seen and the reports are saved (`state.save`) at the end of each
//! turn (once: a turn's saves are limited); an instance that starts with a
//! saved state goes on from there (printing `resumed\tOK\tat line N`)
//! instead of reading a goal. The commands of a
//! turn the host cut run again.
//!
//! A shutdown request (when it runs as a teammate) is approved.
//!
//! A one-line script (say, a spawn prompt) separates its commands with ` ;; `.
//! After the last command the script is done: later turns do nothing. The
//! script is kept in memory (one instance serves the lead's whole run).

wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/lead",
    generate_all,
});

use std::cell::RefCell;

use exports::teamhost::agent::handler::{Guest, Turn, TurnKind, TurnOutcome};
use teamhost::agent::leading::{self, PermissionAnswer, PlanAnswer, RequestKind, SpawnRequest};
use teamhost::agent::protocol::{ProtocolMessage, ShutdownResponse};
use teamhost::agent::tasks::TaskStatus;
use teamhost::agent::team::PermissionMode;
use teamhost::agent::types::Error;
use teamhost::agent::{messaging, state, tasks};

struct Script {
    lines: Vec<String>,
    next: usize,
    plan: Option<String>,
    permission: Option<String>,
    /// Every plain message the lead got, `(from, text)`, for `wait-message`.
    seen: Vec<(String, String)>,
    /// The task ids idle notifications reported completed, in order.
    reports: Vec<String>,
}

impl Script {
    /// Saves the script and where it is (`state.save`); a failure prints
    /// `state\tERR\t…` and the script goes on.
    fn save(&self) {
        let mut out = format!(
            "{}\n{}\n{}\n{}\n",
            self.next,
            escape(self.plan.as_deref().unwrap_or("")),
            escape(self.permission.as_deref().unwrap_or("")),
            self.lines.len()
        );
        for line in &self.lines {
            out += &escape(line);
            out.push('\n');
        }
        out += &format!("{}\n", self.reports.len());
        for id in &self.reports {
            out += &escape(id);
            out.push('\n');
        }
        for (from, text) in &self.seen {
            out += &format!("{}\t{}\n", escape(from), escape(text));
        }
        if let Err(e) = state::save(out.as_bytes()) {
            print("state", false, &describe(&e));
        }
    }

    /// What [`save`](Self::save) wrote; `None` when it does not parse.
    fn decode(bytes: &[u8]) -> Option<Script> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut rows = text.split('\n');
        let next = rows.next()?.parse().ok()?;
        let some = |s: String| (!s.is_empty()).then_some(s);
        let plan = some(unescape_saved(rows.next()?));
        let permission = some(unescape_saved(rows.next()?));
        let count: usize = rows.next()?.parse().ok()?;
        let lines = (0..count)
            .map(|_| rows.next().map(unescape_saved))
            .collect::<Option<Vec<_>>>()?;
        let count: usize = rows.next()?.parse().ok()?;
        let reports = (0..count)
            .map(|_| rows.next().map(unescape_saved))
            .collect::<Option<Vec<_>>>()?;
        let seen = rows
            .filter(|r| !r.is_empty())
            .map(|r| {
                let (from, text) = r.split_once('\t')?;
                Some((unescape_saved(from), unescape_saved(text)))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Script {
            lines,
            next,
            plan,
            permission,
            seen,
            reports,
        })
    }
}

/// `text` with `\`, newlines and tabs escaped, for one saved field.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
}

/// [`escape`] undone.
fn unescape_saved(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

thread_local! {
    static SCRIPT: RefCell<Option<Script>> = const { RefCell::new(None) };
}

struct LeadScript;

impl Guest for LeadScript {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        if let TurnKind::ShutdownRequest(r) = &turn.kind {
            // Spawned as a teammate (a test of a non-lead calling
            // `leading`): it goes when asked.
            let approved = messaging::respond_shutdown(&r.request_id, &ShutdownResponse::Approve);
            report("shutdown-request", approved, |()| r.from.clone());
            return Ok(TurnOutcome { task: None });
        }
        SCRIPT.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                if let Some(saved) = state::load().ok().flatten().and_then(|b| Script::decode(&b)) {
                    print("resumed", true, &format!("at line {}", saved.next + 1));
                    *slot = Some(saved);
                }
            }
            let script = slot.get_or_insert_with(|| Script {
                lines: Vec::new(),
                next: 0,
                plan: None,
                permission: None,
                seen: Vec::new(),
                reports: Vec::new(),
            });
            // No script yet: the first message from `user` (a lead's
            // goal), else the first plain one, else a turn's prompt with no
            // message (a spawned copy's first turn). Protocol mail is never
            // a script (a message turn's prompt is its text): a lead adopted
            // by another host may find idle notifications before its goal.
            if script.lines.is_empty() && script.next == 0 {
                let goal = turn
                    .messages
                    .iter()
                    .find(|m| m.from == "user")
                    .or(turn.messages.iter().find(|m| m.protocol.is_none()))
                    .map(|m| m.text.clone())
                    .or((turn.messages.is_empty() && !turn.prompt.is_empty())
                        .then(|| turn.prompt.clone()));
                if let Some(goal) = goal {
                    // A one-line script (a spawn prompt) separates its
                    // commands with ` ;; `; a longer one is read by lines.
                    script.lines = if goal.contains('\n') {
                        goal.clone()
                    } else {
                        goal.replace(" ;; ", "\n")
                    }
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string)
                    .collect();
                }
            }
            for m in &turn.messages {
                match &m.protocol {
                    None => script.seen.push((m.from.clone(), m.text.clone())),
                    Some(ProtocolMessage::IdleNotification(n)) => {
                        if let Some(id) = &n.completed_task_id {
                            print("report", true, &format!("{id} from {}", n.from));
                            script.reports.push(id.clone());
                        }
                    }
                    Some(_) => {}
                }
            }
            while script.next < script.lines.len() {
                let line = script.lines[script.next].clone();
                if !run(script, &line) {
                    // A wait not satisfied yet: look again next turn.
                    break;
                }
                script.next += 1;
            }
            script.save();
        });
        Ok(TurnOutcome { task: None })
    }
}

/// `line` with each word `big:N` replaced by N `x` characters.
fn expand(line: &str) -> String {
    line.split_whitespace()
        .map(
            |w| match w.strip_prefix("big:").and_then(|n| n.parse().ok()) {
                Some(n) => "x".repeat(n),
                None => w.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one command; `false` when it waits.
fn run(script: &mut Script, line: &str) -> bool {
    let line = expand(line);
    let words: Vec<&str> = line.split_whitespace().collect();
    let (cmd, args) = (words[0], &words[1..]);
    let rest = |from: usize| args.get(from..).unwrap_or_default().join(" ");
    match cmd {
        "create" => {
            let description = (args.len() > 1).then(|| rest(1));
            let name = args.first().copied().unwrap_or("");
            report(
                cmd,
                leading::create_team(name, description.as_deref()),
                |s| s,
            );
        }
        "catalogue" => {
            let names: Vec<String> = leading::catalogue().into_iter().map(|e| e.name).collect();
            print(cmd, true, &names.join(","));
        }
        "spawn" => spawn(args),
        "task" => {
            let r = tasks::create(&tasks::NewTask {
                subject: rest(0),
                description: rest(0),
                active_form: None,
                metadata: None,
            });
            report(cmd, r, |t| format!("#{}", t.id));
        }
        "task-once" => {
            let subject = rest(0);
            let there = match tasks::list() {
                Ok(list) => list.into_iter().find(|t| t.subject == subject),
                Err(e) => {
                    print(cmd, false, &describe(&e));
                    return true;
                }
            };
            match there {
                Some(t) => print(cmd, true, &format!("#{} (there already)", t.id)),
                None => {
                    let r = tasks::create(&tasks::NewTask {
                        subject: subject.clone(),
                        description: subject,
                        active_form: None,
                        metadata: None,
                    });
                    report(cmd, r, |t| format!("#{}", t.id));
                }
            }
        }
        "wait-request" => {
            let want_plan = args.first() == Some(&"plan");
            let found = match leading::pending() {
                Ok(list) => list.into_iter().find(|p| {
                    p.from != "team-lead"
                        && matches!(
                            (&p.kind, want_plan),
                            (RequestKind::Plan, true) | (RequestKind::Permission(_), false)
                        )
                }),
                Err(e) => {
                    print(cmd, false, &describe(&e));
                    return true;
                }
            };
            let Some(found) = found else { return false };
            print(cmd, true, &format!("{} from {}", found.id, found.from));
            if want_plan {
                script.plan = Some(found.id);
            } else {
                script.permission = Some(found.id);
            }
        }
        "answer-plan" => {
            let id = script.plan.clone().unwrap_or_default();
            answer_plan(cmd, &id, args);
        }
        "answer-plan-id" => answer_plan(
            cmd,
            args.first().copied().unwrap_or(""),
            &args[1.min(args.len())..],
        ),
        "answer-permission" => {
            let id = script.permission.clone().unwrap_or_default();
            answer_permission(cmd, &id, args);
        }
        "answer-permission-id" => answer_permission(
            cmd,
            args.first().copied().unwrap_or(""),
            &args[1.min(args.len())..],
        ),
        "own-plan" => {
            let r = messaging::request_plan_approval("# the lead's own plan");
            if let Ok(id) = &r {
                script.plan = Some(id.clone());
            }
            report(cmd, r, |id| id);
        }
        "raw-plan" => {
            let id = script.plan.clone().unwrap_or_default();
            let to = args.first().copied().unwrap_or("");
            let response = match args.get(1) {
                Some(&"approve") => teamhost::agent::protocol::PlanResponse::Approve(
                    args.get(2)
                        .map(|m| mode(m))
                        .unwrap_or(PermissionMode::Default),
                ),
                _ => teamhost::agent::protocol::PlanResponse::Reject(rest(2)),
            };
            report(
                cmd,
                messaging::respond_plan_approval(to, &id, &response),
                |()| id.clone(),
            );
        }
        "shutdown" => {
            let name = args.first().copied().unwrap_or("");
            let reason = if args.len() > 1 {
                rest(1)
            } else {
                "the script is done".into()
            };
            report(cmd, leading::shutdown(name, Some(&reason)), |id| id);
        }
        "repeat" => {
            let times: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(0);
            let command = rest(1);
            for _ in 0..times {
                run(script, &command);
            }
        }
        "raw-shutdown" => {
            let name = args.first().copied().unwrap_or("");
            report(cmd, messaging::request_shutdown(name, None), |d| {
                d.request_id
            });
        }
        "wait-message" => {
            let from = args.first().copied().unwrap_or("");
            let text = rest(1);
            if !script
                .seen
                .iter()
                .any(|(f, t)| f == from && t.contains(&text))
            {
                return false;
            }
            print(cmd, true, from);
        }
        "wait-gone" => {
            let name = args.first().copied().unwrap_or("");
            let list = match leading::teammates() {
                Ok(l) => l,
                Err(e) => {
                    print(cmd, false, &describe(&e));
                    return true;
                }
            };
            if list.iter().any(|t| t.name == name) {
                return false;
            }
            print(cmd, true, name);
        }
        "teammates" => {
            let r = leading::teammates();
            report(cmd, r, |l| {
                l.iter()
                    .map(|t| {
                        format!(
                            "{}:{}:{}",
                            t.name,
                            t.entry.clone().unwrap_or_default(),
                            t.state
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            });
        }
        "pending" => {
            let r = leading::pending();
            report(cmd, r, |l| {
                l.iter()
                    .map(|p| format!("{}:{}:{:?}", p.id, p.from, p.decider))
                    .collect::<Vec<_>>()
                    .join(",")
            });
        }
        "think" => think(args),
        "wait-reports" => {
            let want: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(0);
            let mut ids = script.reports.clone();
            ids.sort();
            ids.dedup();
            if ids.len() < want {
                return false;
            }
            print(cmd, true, &ids.join(","));
        }
        "wait-done" => {
            let list = match tasks::list() {
                Ok(l) => l,
                Err(e) => {
                    print(cmd, false, &describe(&e));
                    return true;
                }
            };
            if list.is_empty() || list.iter().any(|t| !matches!(t.status, TaskStatus::Completed)) {
                return false;
            }
            print(cmd, true, &format!("{} tasks completed", list.len()));
        }
        "delete" => report(cmd, leading::delete_team(), |()| String::new()),
        "echo" => print(cmd, true, &rest(0)),
        "say" => {
            let to = args.first().copied().unwrap_or("");
            report(cmd, messaging::send(to, &rest(1), None), |d| d.message);
        }
        "write" => {
            let path = args.first().copied().unwrap_or("");
            report(cmd, teamhost::agent::tools::write(path, &rest(1)), |()| {
                path.to_string()
            });
        }
        other => print(other, false, "unknown command"),
    }
    true
}

fn think(args: &[&str]) {
    use teamhost::agent::model::{self, ContentBlock, Message, ModelError, Request, Role};
    let times: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(1);
    let max_tokens = args.get(1).and_then(|n| n.parse().ok());
    for i in 0..times {
        let request = Request {
            model: String::new(),
            system: Some("You answer in one word.".into()),
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentBlock::Text(format!("think {i}"))],
            }],
            tools: Vec::new(),
            tool_choice: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
        };
        if let Err(e) = model::complete(&request) {
            let text = match e {
                ModelError::Denied(s) => format!("denied: {s}"),
                ModelError::BudgetExhausted(s) => format!("budget-exhausted: {s}"),
                ModelError::RateLimited(r) => format!("rate-limited: {}", r.message),
                ModelError::Invalid(s) => format!("invalid: {s}"),
                ModelError::Unavailable(s) => format!("unavailable: {s}"),
                ModelError::NotRecorded(s) => format!("not-recorded: {s}"),
            };
            print("think", false, &text);
            return;
        }
    }
    let spent = model::spent();
    print(
        "think",
        true,
        &format!(
            "spent {} left {}",
            spent.cost_microdollars,
            spent
                .cost_left_microdollars
                .map_or("none".to_string(), |l| l.to_string())
        ),
    );
}

fn spawn(args: &[&str]) {
    let (entry, name) = (
        args.first().copied().unwrap_or(""),
        unescape(args.get(1).copied().unwrap_or("")),
    );
    let mut req = SpawnRequest {
        entry: entry.into(),
        name,
        prompt: String::new(),
        mode: None,
        tools: None,
        model: None,
        budget_usd: None,
        plan_mode_required: false,
    };
    let mut prompt = Vec::new();
    for word in args.iter().skip(2) {
        match word.split_once('=') {
            Some(("mode", m)) => req.mode = Some(mode(m)),
            Some(("tools", t)) => req.tools = Some(t.split(',').map(str::to_string).collect()),
            Some(("model", m)) => req.model = Some(m.into()),
            Some(("budget", b)) => req.budget_usd = b.parse().ok(),
            Some(("plan-required", v)) => req.plan_mode_required = v == "yes",
            _ => prompt.push(*word),
        }
    }
    req.prompt = prompt.join(" ");
    report("spawn", leading::spawn(&req), |id| id);
}

/// `word` with each `\u{HEX}` turned into that character, so a script can
/// give a name whitespace (its words are split on whitespace); anything
/// else is kept as written.
fn unescape(word: &str) -> String {
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find("\\u{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        let escaped = after.split_once('}').and_then(|(hex, tail)| {
            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            Some((c, tail))
        });
        match escaped {
            Some((c, tail)) => {
                out.push(c);
                rest = tail;
            }
            None => {
                out.push_str("\\u{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn answer_plan(cmd: &str, id: &str, args: &[&str]) {
    let answer = match args.first() {
        Some(&"approve") => PlanAnswer::Approve(args.get(1).map(|m| mode(m))),
        _ => PlanAnswer::Reject(args.get(1..).unwrap_or_default().join(" ")),
    };
    report(cmd, leading::answer_plan(id, &answer), |()| id.to_string());
}

fn answer_permission(cmd: &str, id: &str, args: &[&str]) {
    let text = args.get(1..).unwrap_or_default().join(" ");
    let answer = match args.first() {
        Some(&"allow") => PermissionAnswer::Allow(None),
        Some(&"allow-input") => {
            let text = text.replace('\\', "\\\\").replace('"', "\\\"");
            PermissionAnswer::Allow(Some(format!("{{\"note\":\"{text}\"}}")))
        }
        _ => PermissionAnswer::Deny(text),
    };
    report(cmd, leading::answer_permission(id, &answer), |()| {
        id.to_string()
    });
}

fn mode(text: &str) -> PermissionMode {
    match text {
        "acceptEdits" => PermissionMode::AcceptEdits,
        "bypassPermissions" => PermissionMode::BypassPermissions,
        "plan" => PermissionMode::Plan,
        "dontAsk" => PermissionMode::DontAsk,
        "delegate" => PermissionMode::Delegate,
        _ => PermissionMode::Default,
    }
}

fn report<T>(cmd: &str, r: Result<T, Error>, ok: impl FnOnce(T) -> String) {
    match r {
        Ok(v) => print(cmd, true, &ok(v)),
        Err(e) => print(cmd, false, &describe(&e)),
    }
}

fn print(cmd: &str, ok: bool, detail: &str) {
    let detail = detail.replace(['\n', '\r', '\t'], " ");
    println!("{cmd}\t{}\t{detail}", if ok { "OK" } else { "ERR" });
}

fn describe(error: &Error) -> String {
    match error {
        Error::Denied(s) => format!("denied: {s}"),
        Error::NotFound(s) => format!("not-found: {s}"),
        Error::Conflict(s) => format!("conflict: {s}"),
        Error::Invalid(s) => format!("invalid: {s}"),
        Error::Unavailable(s) => format!("unavailable: {s}"),
    }
}

export!(LeadScript);
