//! The decisions record: who decided each permission request and plan of a
//! team, escalations included, and the team's approval routes, under
//! `{home}/decisions/{team}/` (not in the store: it is no part of the
//! reference's protocol, and nothing a teammate writes reaches it).
//!
//! | file | written | read |
//! |---|---|---|
//! | `{key}.json` | by the one answer path (`embed::Host::decide`) *before* it answers: created, never replaced, so of two deciders racing only one answers | `run`'s summary, the live view, `decide`'s conflict ("already answered by …") |
//! | `{key}.escalated.json` | when a decider could not decide (the lead beyond its grant or route, a policy no rule of which matched) | the live view ("waiting for you"), the summary |
//! | `routes.json` | `Host::serve_approvals` (`teamhost run`) | `Host::decide` in any process, the live view |
//!
//! `{key}` is the request id when it is made of letters, digits and
//! `-_.@` (every id teamhost makes), else `h-` and the SHA-256 of the id:
//! a request id is teammate text and never becomes a path as is. The
//! directory outlives the team (a record of what was decided); a reader
//! that wants one run's decisions filters by time.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Home;
use crate::approvals::{Decision, Outcome, Routes};
use crate::durable;
use crate::error::{Error, Result};

fn key(request_id: &str) -> String {
    let plain = !request_id.is_empty()
        && request_id.len() <= 160
        && !request_id.starts_with('.')
        && request_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    if plain {
        request_id.to_string()
    } else {
        let digest = Sha256::digest(request_id.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("h-{hex}")
    }
}

fn decided_path(home: &Home, team: &str, request_id: &str) -> PathBuf {
    home.decisions_dir(team)
        .join(format!("{}.json", key(request_id)))
}

fn escalated_path(home: &Home, team: &str, request_id: &str) -> PathBuf {
    home.decisions_dir(team)
        .join(format!("{}.escalated.json", key(request_id)))
}

/// Records `decision` (not an escalation) as the one answer to its request.
/// `Ok(Err(earlier))` when a decision was recorded first: nothing is
/// written, and the caller must not answer.
pub fn claim(
    home: &Home,
    team: &str,
    decision: &Decision,
) -> Result<std::result::Result<(), Decision>> {
    let path = decided_path(home, team, &decision.request_id);
    let staged = path.with_extension(format!("staged.{:08x}", fastrand::u32(..)));
    durable::write_json(&staged, decision)?;
    let linked = std::fs::hard_link(&staged, &path);
    let _ = std::fs::remove_file(&staged);
    match linked {
        Ok(()) => Ok(Ok(())),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            match decided(home, team, &decision.request_id)? {
                Some(earlier) => Ok(Err(earlier)),
                None => Err(Error::io("link", &path, e)),
            }
        }
        Err(e) => Err(Error::io("link", &path, e)),
    }
}

/// Takes back a claim whose answer could not be sent.
pub fn unclaim(home: &Home, team: &str, request_id: &str) -> Result<()> {
    remove(&decided_path(home, team, request_id))
}

/// Records an escalation (the latest one of a request is kept).
pub fn escalate(home: &Home, team: &str, decision: &Decision) -> Result<()> {
    debug_assert_eq!(decision.outcome, Outcome::Escalated);
    durable::write_json(&escalated_path(home, team, &decision.request_id), decision)
}

/// The decision on `request_id`, if one was recorded.
pub fn decided(home: &Home, team: &str, request_id: &str) -> Result<Option<Decision>> {
    durable::read_json(&decided_path(home, team, request_id))
}

/// The latest escalation of `request_id`, if any.
pub fn escalation(home: &Home, team: &str, request_id: &str) -> Result<Option<Decision>> {
    durable::read_json(&escalated_path(home, team, request_id))
}

/// Every decision and escalation of `team` made at or after `since_ms`,
/// oldest first. A file that does not parse is left out (and logged).
pub fn list(home: &Home, team: &str, since_ms: u64) -> Result<Vec<Decision>> {
    let dir = home.decisions_dir(team);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", &dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".json") || name == ROUTES {
            continue;
        }
        match durable::read_json::<Decision>(&path) {
            Ok(Some(d)) if d.at_ms >= since_ms => out.push(d),
            Ok(_) => {}
            Err(e) => tracing::warn!("decisions record {}: {e}", path.display()),
        }
    }
    out.sort_by(|a, b| (a.at_ms, &a.request_id).cmp(&(b.at_ms, &b.request_id)));
    Ok(out)
}

const ROUTES: &str = "routes.json";

/// Keeps the team's approval routes, for every process that answers or
/// shows its requests.
pub fn write_routes(home: &Home, team: &str, routes: &Routes) -> Result<()> {
    durable::write_json(&home.decisions_dir(team).join(ROUTES), routes)
}

/// The team's approval routes, when a run set them.
pub fn read_routes(home: &Home, team: &str) -> Result<Option<Routes>> {
    durable::read_json(&home.decisions_dir(team).join(ROUTES))
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approvals::{Answer, Decider, PermitAnswer, Request};
    use crate::protocol::PermissionRequest;

    fn request(id: &str) -> Request {
        let mut p = PermissionRequest::new("fixer", "Bash", "t", "d", json!({"command": "ls"}));
        p.request_id = id.into();
        Request::Permission(p)
    }

    fn allow(r: &Request, by: Decider) -> Decision {
        Decision::answered(
            r,
            by,
            &Answer::Permit(PermitAnswer::Allow {
                updated_input: None,
                permission_updates: Vec::new(),
            }),
        )
    }

    #[test]
    fn the_first_claim_wins_and_the_second_learns_who_answered() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let r = request("perm-1-abc");
        assert_eq!(
            claim(&home, "t", &allow(&r, Decider::Person)).unwrap(),
            Ok(())
        );
        let earlier = claim(&home, "t", &allow(&r, Decider::Lead))
            .unwrap()
            .unwrap_err();
        assert_eq!(earlier.decider, Decider::Person);
        escalate(&home, "t", &Decision::escalated(&r, Decider::Lead, "no")).unwrap();
        let all = list(&home, "t", 0).unwrap();
        assert_eq!(all.len(), 2, "{all:?}");
        unclaim(&home, "t", "perm-1-abc").unwrap();
        assert_eq!(decided(&home, "t", "perm-1-abc").unwrap(), None);
    }

    #[test]
    fn a_request_id_that_is_not_a_plain_word_never_becomes_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let r = request("../../escape");
        claim(&home, "t", &allow(&r, Decider::Person))
            .unwrap()
            .unwrap();
        assert!(!dir.path().join("escape.json").exists());
        assert_eq!(
            decided(&home, "t", "../../escape")
                .unwrap()
                .unwrap()
                .request_id,
            "../../escape"
        );
        assert!(key("../../escape").starts_with("h-"));
    }
}
