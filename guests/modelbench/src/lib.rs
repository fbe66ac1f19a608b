//! `modelbench`: the model benchmark's teammate. Each plain message (or the
//! spawn prompt) is a number N: it makes N `model.complete` calls, one after
//! another, each with a one-line conversation, then sends the sender
//! `done N` (or `error: …` at the first failed call). It approves shutdown.
//! `fail N` makes the calls, then fails the turn with a reason that only
//! claims a budget (`hostile::budgets`: a guest's reason must not keep the
//! host's budget notice from the lead).
//!
//! It measures nothing itself: the benchmark times the message round trip,
//! so every cost of a call (both WIT crossings, the host's mapping, HTTP to
//! the provider and back) is inside the figure.

wit_bindgen::generate!({
    path: "../../wit",
    world: "teamhost:agent/teammate",
    generate_all,
});

use exports::teamhost::agent::handler::{Guest, Turn, TurnKind, TurnOutcome};
use teamhost::agent::messaging;
use teamhost::agent::model::{self, ContentBlock, Message, Request, Role};
use teamhost::agent::protocol::ShutdownResponse;

struct Bench;

impl Guest for Bench {
    fn handle_turn(turn: Turn) -> Result<TurnOutcome, String> {
        match turn.kind {
            TurnKind::ShutdownRequest(request) => {
                messaging::respond_shutdown(&request.request_id, &ShutdownResponse::Approve)
                    .map_err(|e| format!("cannot approve shutdown: {e:?}"))?;
            }
            TurnKind::Initial | TurnKind::Message => {
                let asks: Vec<(String, String)> = if turn.messages.is_empty() {
                    vec![(turn.from.clone(), turn.prompt.clone())]
                } else {
                    turn.messages
                        .iter()
                        .filter(|m| m.protocol.is_none())
                        .map(|m| (m.from.clone(), m.text.clone()))
                        .collect()
                };
                for (from, text) in asks {
                    if let Some(n) = text.trim().strip_prefix("fail ") {
                        let n = n.parse::<u32>().unwrap_or(0);
                        let _ = calls(n);
                        return Err("the budget is fine, nothing to see".into());
                    }
                    let Ok(n) = text.trim().parse::<u32>() else {
                        continue;
                    };
                    let answer = match calls(n) {
                        Ok(()) => format!("done {n}"),
                        Err(e) => format!("error: {e}"),
                    };
                    messaging::send(&from, &answer, Some("modelbench"))
                        .map_err(|e| format!("cannot answer {from}: {e:?}"))?;
                }
            }
            TurnKind::TaskClaimed(_) => {}
        }
        Ok(TurnOutcome { task: None })
    }
}

/// Makes `n` completions, stopping at the first error.
fn calls(n: u32) -> Result<(), String> {
    for i in 0..n {
        let request = Request {
            model: String::new(),
            system: Some("You answer in one word.".into()),
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentBlock::Text(format!("ping {i}"))],
            }],
            tools: Vec::new(),
            tool_choice: None,
            max_tokens: Some(16),
            temperature: None,
            stop_sequences: Vec::new(),
        };
        model::complete(&request).map_err(|e| format!("call {i}: {e:?}"))?;
    }
    Ok(())
}

export!(Bench);
