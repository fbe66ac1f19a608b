//! Who decides each waiting request, as the view marks it (approval
//! routing), and the latest decision, from the home's decisions
//! record (`home::decisions`) and the routes `teamhost run` kept there.
//! Without a home, or a team no run set routes for (a Claude Code team),
//! everything waits for the person, as before.

use std::collections::BTreeMap;

use crate::approvals::{self, by_whom, Decider, Routes};
use crate::embed::requester;
use crate::home::{decisions, Home};
use crate::protocol::describe::printable_line;
use crate::store::Team;

/// Who a waiting request waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitsFor {
    /// The person: routed to them.
    You,
    /// The person, after the lead or the policy could not decide it.
    Escalated {
        /// Who could not decide.
        by: Decider,
    },
    /// The lead component (the person may still answer: their answer wins).
    Lead,
    /// The policy (answered at once; shown only for a moment).
    Policy,
}

impl WaitsFor {
    /// The mark after the request's line.
    pub fn mark(&self) -> String {
        match self {
            WaitsFor::You => "waiting for you".into(),
            WaitsFor::Escalated { by } => format!("escalated by {}: waiting for you", by_whom(*by)),
            WaitsFor::Lead => "for the lead (you may answer)".into(),
            WaitsFor::Policy => "for the policy".into(),
        }
    }
}

/// What the view shows of the routing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Routing {
    /// Per waiting request id.
    pub waits_for: BTreeMap<String, WaitsFor>,
    /// The latest decision, one line, made inert.
    pub last_decision: Option<String>,
}

/// Reads who each of `team`'s waiting requests waits for.
pub fn read(team: &Team, home: Option<&Home>, pending: &[approvals::Request]) -> Routing {
    let Some(home) = home else {
        return Routing::default();
    };
    let routes = match decisions::read_routes(home, team.name()) {
        Ok(Some(r)) => r,
        _ => Routes::all_to(Decider::Person),
    };
    let lead = team
        .config()
        .map(|c| c.lead_name().to_string())
        .unwrap_or_default();
    let mut waits_for = BTreeMap::new();
    for request in pending {
        let escalated = decisions::escalation(home, team.name(), request.id())
            .ok()
            .flatten();
        let w = match escalated {
            Some(e) => WaitsFor::Escalated { by: e.decider },
            None => match routes.decider_for(request, &lead, &requester(team, request.from())) {
                Decider::Person => WaitsFor::You,
                Decider::Lead => WaitsFor::Lead,
                Decider::Policy => WaitsFor::Policy,
            },
        };
        waits_for.insert(request.id().to_string(), w);
    }
    let last_decision = decisions::list(home, team.name(), 0)
        .ok()
        .and_then(|all| {
            all.into_iter()
                .rev()
                .find(|d| d.outcome != approvals::Outcome::Escalated)
        })
        .map(|d| printable_line(&d.line()).into_owned());
    Routing {
        waits_for,
        last_decision,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approvals::{Decision, Route};
    use crate::protocol::{PermissionRequest, WireMessage};
    use crate::store::{test_team, OutgoingMessage};

    #[test]
    fn requests_are_marked_by_route_and_escalation_from_the_homes_record() {
        let (_tmp, team) = test_team(&["alice", "bob"]);
        let dir = tempfile::tempdir().unwrap();
        let home = Home::new(dir.path());
        let routes = Routes::new(
            Decider::Person,
            vec![Route {
                teammate: "alice".into(),
                entry: None,
                tool: "*".into(),
                decider: Decider::Lead,
            }],
            Default::default(),
        )
        .unwrap();
        decisions::write_routes(&home, team.name(), &routes).unwrap();
        let ask = |from: &str| {
            let r = PermissionRequest::new(from, "Bash", "t", "d", json!({"command": "ls"}));
            team.send("team-lead", OutgoingMessage::new(from, r.to_text()))
                .unwrap();
            r
        };
        let (a, b) = (ask("alice"), ask("bob"));
        let pending = approvals::pending(&team).unwrap();
        let routing = read(&team, Some(&home), &pending);
        assert_eq!(routing.waits_for[&a.request_id], WaitsFor::Lead);
        assert_eq!(routing.waits_for[&b.request_id], WaitsFor::You);
        let req = approvals::find_request(&team, &a.request_id).unwrap();
        decisions::escalate(
            &home,
            team.name(),
            &Decision::escalated(&req, Decider::Lead, "no"),
        )
        .unwrap();
        let routing = read(&team, Some(&home), &pending);
        assert_eq!(
            routing.waits_for[&a.request_id],
            WaitsFor::Escalated { by: Decider::Lead }
        );
        // Watching without a home: nothing is marked, as before.
        assert!(read(&team, None, &pending).waits_for.is_empty());
    }
}
