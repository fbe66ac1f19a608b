//! What the lead reads through its seat: its catalogue, the requests
//! waiting (each with whom it is routed to, its detail bounded) and its
//! teammates (state, mode, task).

use crate::approvals::{self, Request};
use crate::embed::approvals::{requester, routes_of};
use crate::embed::lead::seat::{unavailable, LeadSeat};
use crate::runtime::lead_host::{CatalogueView, LeadError, PendingKind, PendingView, TeammateView};
use crate::teammate::TeammateState;

/// The most of a request's input or plan text [`LeadHost::pending`] shows.
const DETAIL_CHARS: usize = 2_000;

impl LeadSeat {
    pub(super) fn catalogue_view(&self) -> Vec<CatalogueView> {
        self.spec
            .catalogue
            .iter()
            .map(|e| CatalogueView {
                name: e.name.clone(),
                description: e.description.clone(),
                max_mode: e.max_mode,
                tools: e.rules.allowed_texts(),
                models: e.models.clone(),
                budget_usd: e.budget_usd,
            })
            .collect()
    }

    pub(super) fn pending_view(&self) -> Result<Vec<PendingView>, LeadError> {
        let waiting = approvals::pending(&self.team).map_err(unavailable)?;
        let host = self.host()?;
        let routes = routes_of(host.home(), self.team.name());
        Ok(waiting
            .into_iter()
            .map(|r| {
                let from = r.from().to_string();
                let decider =
                    routes.decider_for(&r, self.lead_name(), &requester(&self.team, &from));
                let (kind, detail) = match &r {
                    Request::Permission(p) => (
                        PendingKind::Permission(p.tool_name.clone()),
                        p.input.to_string(),
                    ),
                    Request::Plan(p) => (PendingKind::Plan, p.plan_content.clone()),
                };
                PendingView {
                    id: r.id().to_string(),
                    from,
                    kind,
                    detail: bounded(detail),
                    decider,
                }
            })
            .collect())
    }

    pub(super) fn teammates_view(&self) -> Result<Vec<TeammateView>, LeadError> {
        self.require_formed()?;
        let members = self.members()?;
        let host = self.host()?;
        let running = host.teammates(self.team.name());
        let tasks = self.team.list_tasks().map_err(unavailable)?;
        let spawned = self.spawned.lock().expect("spawned lock").clone();
        Ok(members
            .into_iter()
            .map(|m| {
                let state = running
                    .iter()
                    .find(|t| t.name == m.name)
                    .map(|t| state_word(&t.state))
                    .unwrap_or(if m.is_active == Some(true) {
                        "active"
                    } else {
                        "idle"
                    });
                let task = tasks
                    .iter()
                    .find(|t| {
                        t.owner.as_deref() == Some(m.name.as_str())
                            && t.status == crate::store::TaskStatus::InProgress
                    })
                    .map(|t| t.id.clone());
                TeammateView {
                    entry: spawned.get(&m.name).cloned(),
                    state: state.to_string(),
                    mode: crate::teammate::member_mode(&m)
                        .ok()
                        .flatten()
                        .unwrap_or_default(),
                    task,
                    name: m.name,
                }
            })
            .collect())
    }
}

fn bounded(text: String) -> String {
    if text.chars().count() <= DETAIL_CHARS {
        return text;
    }
    let mut out: String = text.chars().take(DETAIL_CHARS).collect();
    out.push('…');
    out
}

fn state_word(state: &TeammateState) -> &'static str {
    match state {
        TeammateState::Idle | TeammateState::AwaitingPlanApproval => "idle",
        TeammateState::Completed | TeammateState::Failed(_) | TeammateState::Killed => "stopped",
        TeammateState::Compiling
        | TeammateState::Starting
        | TeammateState::Active
        | TeammateState::ShutdownRequested => "active",
    }
}
