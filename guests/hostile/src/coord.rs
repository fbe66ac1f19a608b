//! `coord …`: attacks through the coordination interfaces (class 5: rules on
//! coordination calls; class 6: coordination floods). One command word,
//! `coord`, then a sub-command:
//!
//! | sub-command | what it tries |
//! |---|---|
//! | `send NAME TEXT…` | `messaging.send(NAME, TEXT)` |
//! | `deliver NAME TEXT…` | `mailbox.deliver(NAME, TEXT)` |
//! | `broadcast TEXT…` | `messaging.broadcast(TEXT)` |
//! | `create SUBJECT…` | `tasks.create(SUBJECT)` |
//! | `update ID SUBJECT…` | `tasks.update(ID, subject SUBJECT)` |
//! | `hijack ID OWNER TEXT…` | `tasks.update(ID)`: owner OWNER, status `in-progress`, description TEXT (puts work in progress under another teammate's name, for a resume to hand it back) |
//! | `touch-task ID` | every other change of task ID: `claim`, `add-dependency(ID, ID)`, `delete` |
//! | `read-tasks ID` | `tasks.get(ID)` and `tasks.list()` |
//! | `flood-send NAME N` | N `messaging.send(NAME, "flood #i")` in one turn, reported once at the end |
//! | `flood-broadcast N` | N broadcasts in one turn |
//! | `flood-tasks N` | N `tasks.create` in one turn |
//!
//! Each step is reported as `coord/SUB` (the flood ones only at the end,
//! with how many calls succeeded, so the reports do not count against the
//! limit being flooded).

use super::{mailbox, messaging, report, tasks, tool, wit_error, NewTask};

/// Runs `coord ARGS…`.
pub fn run(args: &[&str]) {
    match args {
        ["send", to, text @ ..] => {
            let r = messaging::send(to, &text.join(" "), None);
            tool("coord/send", r, |d| d.message.clone());
        }
        ["deliver", to, text @ ..] => {
            let r = mailbox::deliver(to, &text.join(" "), None);
            tool("coord/deliver", r, |_| "delivered".into());
        }
        ["broadcast", text @ ..] => {
            let r = messaging::broadcast(&text.join(" "), None);
            tool("coord/broadcast", r, |d| d.message.clone());
        }
        ["create", subject @ ..] => {
            let r = tasks::create(&new_task(&subject.join(" ")));
            tool("coord/create", r, |t| format!("task #{}", t.id));
        }
        ["update", id, subject @ ..] => {
            let changes = tasks::TaskUpdate {
                subject: Some(subject.join(" ")),
                description: None,
                active_form: None,
                status: None,
                owner: None,
                metadata: None,
            };
            let r = tasks::update(id, &changes);
            tool("coord/update", r, |t| {
                format!("task #{} {}", t.id, t.subject)
            });
        }
        ["hijack", id, owner, text @ ..] => {
            let changes = tasks::TaskUpdate {
                subject: None,
                description: Some(text.join(" ")),
                active_form: None,
                status: Some(tasks::TaskStatus::InProgress),
                owner: Some(tasks::OwnerChange::Assign(owner.to_string())),
                metadata: None,
            };
            let r = tasks::update(id, &changes);
            tool("coord/hijack", r, |t| {
                format!("task #{} {:?} owner {:?}", t.id, t.status, t.owner)
            });
        }
        ["touch-task", id] => {
            match tasks::claim(id, false) {
                Ok(t) => report("coord/claim", true, format!("task #{}", t.id)),
                Err(tasks::ClaimError::Other(e)) => report("coord/claim", false, wit_error(&e)),
                Err(other) => report("coord/claim", false, format!("{other:?}")),
            }
            let r = tasks::add_dependency(id, id);
            tool("coord/add-dependency", r, |_| "added".into());
            let r = tasks::delete(id);
            tool("coord/delete", r, |_| "deleted".into());
        }
        ["read-tasks", id] => {
            let r = tasks::get(id);
            tool("coord/get", r, |t| format!("task #{} {}", t.id, t.subject));
            let r = tasks::list();
            tool("coord/list", r, |l| format!("{} tasks", l.len()));
        }
        ["flood-send", to, n] => flood("coord/flood-send", n, |i| {
            messaging::send(to, &format!("flood #{i}"), None).map(|_| ())
        }),
        ["flood-broadcast", n] => flood("coord/flood-broadcast", n, |i| {
            messaging::broadcast(&format!("flood #{i}"), None).map(|_| ())
        }),
        ["flood-tasks", n] => flood("coord/flood-tasks", n, |i| {
            tasks::create(&new_task(&format!("flood #{i}"))).map(|_| ())
        }),
        _ => report("coord", false, format!("unknown coord command {args:?}")),
    }
}

fn new_task(subject: &str) -> NewTask {
    NewTask {
        subject: subject.into(),
        description: String::new(),
        active_form: None,
        metadata: None,
    }
}

/// Makes `n` calls of `call`, then reports how many succeeded and the first
/// error. Only reached when the host did not stop the guest on the way.
fn flood(step: &str, n: &str, mut call: impl FnMut(u32) -> Result<(), super::Error>) {
    let n: u32 = n.parse().unwrap_or(1_000);
    let mut ok = 0;
    let mut first_error = None;
    for i in 0..n {
        match call(i) {
            Ok(()) => ok += 1,
            Err(e) => {
                first_error.get_or_insert_with(|| wit_error(&e));
            }
        }
    }
    let error = first_error.unwrap_or_default();
    report(step, ok == n, format!("{ok} of {n} succeeded {error}"));
}
