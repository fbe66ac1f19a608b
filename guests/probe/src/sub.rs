//! The probe's sub-agent directives (issue 15's end-to-end tests).
//!
//! # As a parent
//!
//! A message whose text starts with `sub ` drives `subagents`:
//!
//! | message | does | answers the sender |
//! |---|---|---|
//! | `sub run [OPTS] -- PROMPT` | `subagents.run` | `sub-result STATUS ID OUTPUT` or `sub-error ERROR` |
//! | `sub spawn [OPTS] -- PROMPT` | `subagents.launch` | `sub-spawned ID` or `sub-error ERROR` |
//! | `sub send ID -- TEXT` | `subagents.send` | `sub-sent ID` or `sub-error ERROR` |
//! | `sub stop ID` | `subagents.stop` | `sub-stopped ID` or `sub-error ERROR` |
//! | `sub list` | `subagents.list` | `sub-list ID:STATUS:DEPTH …` |
//!
//! OPTS: `mode=M`, `model=M`, `type=T`, `name=N`, `worktree`.
//!
//! A message from `teamhost` that is a `<task-notification>` is answered to
//! the lead as `notified STATUS RESULT` (the tags' contents).
//!
//! # As a sub-agent
//!
//! (`subagents.whoami` is `some`.) Its prompt or message words:
//!
//! | words | result (`subagents.report`) |
//! |---|---|
//! | `say TEXT` | `said: TEXT` |
//! | `write FILE TEXT` | writes FILE with the sandboxed tool; `wrote FILE` or the error |
//! | `fail` | the turn fails with `told to fail` |
//! | `spin` | loops until stopped |
//! | `trap` | traps (`unreachable`) |
//! | `deep-spin` | runs a sub-agent `spin` and waits for it (for ever) |
//! | `dm TEXT` | tries to message the lead: `dm sent` or `dm refused: ERROR` |
//! | `write-spin FILE TEXT` | writes FILE, then loops until stopped |
//! | `nest N OPTS` | runs a sub-agent `nest N-1` (`say bottom` at 0) and reports `depth D: ` + its result or error |
//! | anything else (a resumed turn) | `resumed: TEXT` |

use crate::teamhost::agent::subagents::{self, Start, Status};

fn status(s: Status) -> &'static str {
    match s {
        Status::Running => "running",
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Killed => "killed",
    }
}

fn start(opts: &str, prompt: &str) -> Start {
    let mut s = Start {
        description: "probe sub-agent".into(),
        prompt: prompt.trim().to_string(),
        subagent_type: None,
        model: None,
        name: None,
        mode: None,
        worktree: false,
        tool_use_id: None,
    };
    for w in opts.split_whitespace() {
        match w.split_once('=') {
            Some(("mode", v)) => s.mode = Some(v.into()),
            Some(("model", v)) => s.model = Some(v.into()),
            Some(("type", v)) => s.subagent_type = Some(v.into()),
            Some(("name", v)) => s.name = Some(v.into()),
            _ if w == "worktree" => s.worktree = true,
            _ => {}
        }
    }
    s
}

/// A parent's `sub …` message: the answer to send back, if it was one.
pub fn parent_directive(text: &str) -> Option<String> {
    let rest = text.strip_prefix("sub ")?;
    let (head, tail) = rest.split_once("--").unwrap_or((rest, ""));
    let mut words = head.split_whitespace();
    let verb = words.next().unwrap_or("");
    let opts: Vec<&str> = words.collect();
    let opts = opts.join(" ");
    Some(match verb {
        "run" => match subagents::run(&start(&opts, tail)) {
            Ok(i) => format!(
                "sub-result {} {} {}{}",
                status(i.status),
                i.id,
                i.output,
                i.worktree.map(|w| format!(" [wt={w}]")).unwrap_or_default()
            ),
            Err(e) => format!("sub-error {e:?}"),
        },
        "spawn" => match subagents::launch(&start(&opts, tail)) {
            Ok(id) => format!("sub-spawned {id}"),
            Err(e) => format!("sub-error {e:?}"),
        },
        "send" => match subagents::send(opts.trim(), tail.trim()) {
            Ok(()) => format!("sub-sent {}", opts.trim()),
            Err(e) => format!("sub-error {e:?}"),
        },
        "stop" => match subagents::stop(opts.trim()) {
            Ok(()) => format!("sub-stopped {}", opts.trim()),
            Err(e) => format!("sub-error {e:?}"),
        },
        "list" => {
            let all: Vec<String> = subagents::list()
                .iter()
                .map(|i| format!("{}:{}:{}", i.id, status(i.status), i.depth))
                .collect();
            format!("sub-list {}", all.join(" "))
        }
        other => format!("sub-error unknown verb {other:?}"),
    })
}

/// The text between `<tag>` and `</tag>`.
fn tag<'a>(text: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    text.split_once(&open)
        .and_then(|(_, rest)| rest.split_once(&close))
        .map_or("", |(inside, _)| inside)
}

/// A task notification, as the line the probe tells the lead.
pub fn notification(text: &str) -> Option<String> {
    if !text.starts_with("<task-notification>") {
        return None;
    }
    let body = match tag(text, "result") {
        "" => tag(text, "error"),
        r => r,
    };
    Some(format!(
        "notified {} {} {}",
        tag(text, "status"),
        tag(text, "task-id"),
        body
    ))
}

/// A sub-agent's turn: `Ok` after reporting, `Err` for `fail`.
pub fn as_sub_agent(text: &str, resumed: bool) -> Result<(), String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let report = match words.as_slice() {
        _ if resumed => format!("resumed: {text}"),
        ["say", rest @ ..] => format!("said: {}", rest.join(" ")),
        ["write", file, rest @ ..] => {
            match crate::teamhost::agent::tools::write(file, &rest.join(" ")) {
                Ok(()) => format!("wrote {file}"),
                Err(e) => format!("write refused: {e:?}"),
            }
        }
        ["fail", ..] => return Err("told to fail".into()),
        ["spin", ..] => spin(),
        ["trap", ..] => core::arch::wasm32::unreachable(),
        ["deep-spin", ..] => match subagents::run(&start("", "spin")) {
            Ok(i) => format!("deep-spin ended: {}", i.output),
            Err(e) => format!("deep-spin refused: {e:?}"),
        },
        ["dm", rest @ ..] => {
            match crate::teamhost::agent::messaging::send("team-lead", &rest.join(" "), None) {
                Ok(_) => "dm sent".to_string(),
                Err(e) => format!("dm refused: {e:?}"),
            }
        }
        ["write-spin", file, rest @ ..] => {
            let _ = crate::teamhost::agent::tools::write(file, &rest.join(" "));
            spin()
        }
        ["nest", n, opts @ ..] => {
            let n: u32 = n.parse().unwrap_or(0);
            let me = subagents::whoami().map_or(0, |c| c.depth);
            let prompt = if n == 0 {
                "say bottom".to_string()
            } else {
                format!("nest {} {}", n - 1, opts.join(" "))
            };
            match subagents::run(&start(&opts.join(" "), &prompt)) {
                Ok(i) => format!("depth {me}: {}", i.output),
                Err(e) => format!("depth {me}: sub-error {e:?}"),
            }
        }
        _ => format!("resumed: {text}"),
    };
    subagents::report(&report);
    Ok(())
}

fn spin() -> ! {
    loop {
        std::hint::black_box(0);
    }
}
