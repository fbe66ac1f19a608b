//! Protocol request ids in a replayed answer, rebound to the live run.
//!
//! A lead's answer names the request it answers (`plan_approval-{ms}@{agent}@{team}`,
//! `perm-{ms}-{7}`); the host makes those ids at run time, so a recorded
//! answer names an id of the recording's run that the replayed run never
//! made. [`rebind`] replaces, in a served answer's tool calls, each such id
//! the live request does not show with the newest id of the same shape it
//! does show (same family, and for a plan the same agent and team). An id
//! the live request shows, or one with no counterpart in it, stays as
//! recorded. Only ids are touched: the answer's calls, text and order are
//! the recording's.

use std::sync::OnceLock;

use regex::Regex;

use super::types::{ContentBlock, Request, Response};

/// The protocol request ids a lead answers: a plan approval's and a
/// permission request's.
fn ids() -> &'static Regex {
    static IDS: OnceLock<Regex> = OnceLock::new();
    IDS.get_or_init(|| {
        Regex::new(r"plan_approval-\d+@[A-Za-z0-9_.@-]+|perm-\d+-[A-Za-z0-9]+").expect("id regex")
    })
}

/// The family of `id` with its run-time part left out: what a live id must
/// share with a recorded one to stand in for it.
fn shape(id: &str) -> String {
    match id.split_once('@') {
        Some((_, rest)) if id.starts_with("plan_approval-") => format!("plan_approval@{rest}"),
        _ => "perm".to_string(),
    }
}

/// `response` with every request id of its tool calls that `live` does not
/// show replaced by the newest id of the same shape `live` does show.
pub fn rebind(mut response: Response, live: &Request) -> Response {
    let text = serde_json::to_string(&live.messages).unwrap_or_default();
    let shown: Vec<&str> = ids().find_iter(&text).map(|m| m.as_str()).collect();
    for block in &mut response.content {
        let ContentBlock::ToolUse(call) = block else {
            continue;
        };
        let rebound = ids().replace_all(&call.input, |c: &regex::Captures<'_>| {
            let recorded = &c[0];
            if shown.contains(&recorded) {
                return recorded.to_string();
            }
            let want = shape(recorded);
            shown
                .iter()
                .rev()
                .find(|id| shape(id) == want)
                .map_or_else(|| recorded.to_string(), |id| (*id).to_string())
        });
        call.input = rebound.into_owned();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{Message, StopReason, ToolUse, Usage};

    fn answer(input: &str) -> Response {
        Response {
            id: "r".into(),
            model: "m".into(),
            content: vec![ContentBlock::ToolUse(ToolUse {
                id: "t".into(),
                name: "SendMessage".into(),
                input: input.into(),
            })],
            stop_reason: StopReason::ToolUse,
            usage: Usage::default(),
        }
    }

    fn input(r: &Response) -> &str {
        match &r.content[0] {
            ContentBlock::ToolUse(t) => &t.input,
            _ => unreachable!(),
        }
    }

    fn live(text: &str) -> Request {
        Request::new(vec![Message::user(text)])
    }

    #[test]
    fn a_stale_id_takes_the_newest_live_id_of_its_shape() {
        let live = live(
            r#"{"requestId":"plan_approval-5@fixer@t"} {"requestId":"plan_approval-6@other@t"} {"request_id":"perm-7-abcdefg"}"#,
        );
        let r = rebind(
            answer(r#"{"request_id":"plan_approval-1@fixer@t","p":"perm-2-zzzzzzz"}"#),
            &live,
        );
        assert_eq!(
            input(&r),
            r#"{"request_id":"plan_approval-5@fixer@t","p":"perm-7-abcdefg"}"#
        );
    }

    #[test]
    fn a_shown_id_or_one_without_a_counterpart_stays() {
        let live = live(r#"{"request_id":"perm-7-abcdefg"} {"request_id":"perm-8-bbbbbbb"}"#);
        let r = rebind(
            answer(r#"{"a":"perm-7-abcdefg","b":"plan_approval-1@fixer@t"}"#),
            &live,
        );
        assert_eq!(
            input(&r),
            r#"{"a":"perm-7-abcdefg","b":"plan_approval-1@fixer@t"}"#
        );
    }
}
