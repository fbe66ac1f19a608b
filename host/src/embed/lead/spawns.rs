//! A lead's spawns: a teammate from its catalogue, named and prompted by the
//! lead, granted at most the entry and the lead's own grant
//! ([`LeadGrant::may_spawn`]) from the budget the broker keeps for the
//! lead, within `max_teammates` at once and `max_spawns_total` over its
//! life.

use std::sync::atomic::Ordering;

use crate::embed::grant::{CatalogueEntry, Granted, LeadGrant};
use crate::embed::lead::seat::{unavailable, LeadSeat};
use crate::embed::{Host, SpawnRequest, TeammateSettings};
use crate::model::ModelPolicy;
use crate::runtime::lead_host::{Caller, LeadError, LeadSpawn};

impl LeadSeat {
    /// The lead's own grant now, `given` microdollars already given: what
    /// is left of its budget (the one its broker keeps, the default
    /// included) after its own model calls, those in flight and its gifts,
    /// as its meter counts them; before its meter is attached, its budget
    /// less its gifts.
    pub(super) fn lead_grant(&self, caller: &Caller, host: &Host, given: u64) -> LeadGrant {
        let policy = self.spec.settings.model_policy.as_ref();
        let hub = host.inner.opts.models.hub();
        let metered = self.meters.get().and_then(|m| m.model.cost_left_to_give());
        LeadGrant {
            mode: caller.mode,
            rules: caller.rules.clone(),
            models: policy.map(|p| p.allow.clone()).unwrap_or_default(),
            budget_left_microdollars: metered.or_else(|| {
                policy
                    .and_then(|p| hub.budget_for(p))
                    .map(|budget| budget.saturating_sub(given))
            }),
        }
    }

    /// Takes `amount` out of the lead's purse (its meter: what it may still
    /// spend on its own calls shrinks by it); `denied` when its calls took
    /// what was left meanwhile.
    fn charge(&self, amount: u64) -> Result<(), LeadError> {
        match self.meters.get() {
            Some(m) => m.model.give(amount).map_err(LeadError::Denied),
            None => Ok(()),
        }
    }

    /// Gives back a charge whose spawn failed.
    fn refund(&self, amount: u64) {
        if let Some(m) = self.meters.get() {
            m.model.give_back(amount);
        }
    }

    pub(super) async fn spawn_now(
        &self,
        caller: Caller,
        req: LeadSpawn,
    ) -> Result<String, LeadError> {
        self.require_formed()?;
        let entry = self.entry(&req.entry)?.clone();
        if req.name.trim().is_empty() || req.prompt.trim().is_empty() {
            return Err(LeadError::Invalid(
                "a teammate needs a name and a prompt".into(),
            ));
        }
        self.check_text("the spawn prompt", &req.prompt)?;
        // A name is a file stem in the team's directory and the teammate's
        // default directory, and what the team reads as who wrote: nothing
        // path-like, nothing that looks like the lead, the person, the host,
        // a flag or another member.
        crate::store::names::check_new_member_name(&req.name)
            .map_err(|e| LeadError::Invalid(format!("teammate name: {e}")))?;
        let members = self.members()?;
        if req.name == self.lead_name() || members.iter().any(|m| m.name == req.name) {
            return Err(LeadError::Conflict(format!(
                "{:?} is already a member of the team: choose another name",
                req.name
            )));
        }
        let names = members.iter().map(|m| m.name.as_str());
        crate::store::names::check_distinct(&req.name, names.chain([self.lead_name()]))
            .map_err(|e| LeadError::Conflict(format!("teammate name: {e}")))?;
        if members.len() >= self.spec.max_teammates {
            return Err(LeadError::Denied(format!(
                "the lead may have at most {} teammates at once; shut one down first \
                 (or raise [lead] max_teammates)",
                self.spec.max_teammates
            )));
        }
        let spawned = self.spawns.load(Ordering::SeqCst);
        if spawned >= self.spec.max_spawns_total {
            return Err(LeadError::Denied(format!(
                "the lead may spawn at most {} teammates over its life and has spawned {spawned} \
                 (shut-down teammates count too); raise [lead] max_spawns_total to allow more",
                self.spec.max_spawns_total
            )));
        }
        let host = self.host()?;
        // What the purse is charged is what the broker will hold the
        // teammate to: its budget, or the default its model gets.
        let hub = host.inner.opts.models.hub().clone();
        let unset_budget = |model: &str| hub.budget_for(&ModelPolicy::new(vec![model.to_string()]));
        let granted = {
            let mut given = self.given.lock().expect("given lock");
            let granted = self
                .lead_grant(&caller, &host, *given)
                .may_spawn(&entry, &req, &unset_budget)
                .map_err(LeadError::Denied)?;
            let charge = granted.budget_microdollars.unwrap_or(0);
            self.charge(charge)?;
            if let Err(e) = self.count_text("the spawn prompt", &req.prompt) {
                self.refund(charge);
                return Err(e);
            }
            *given = given.saturating_add(charge);
            granted
        };
        // Counted before the spawn runs, whatever its end: every spawn
        // writes a member, a directory and an inbox.
        self.spawns.fetch_add(1, Ordering::SeqCst);
        // Charged and counted on this machine before it runs: a host that
        // dies during the spawn leaves the budget given, never more than
        // the purse held.
        self.keep().await;
        let spawned = self.spawn_granted(&host, &entry, req, granted).await;
        // With its teammate, or with the budget given back.
        self.keep().await;
        spawned
    }

    /// Spawns what [`spawn_now`](Self::spawn_now) granted and charged;
    /// gives the budget back when the spawn fails.
    async fn spawn_granted(
        &self,
        host: &Host,
        entry: &CatalogueEntry,
        req: LeadSpawn,
        granted: Granted,
    ) -> Result<String, LeadError> {
        let charged = granted.budget_microdollars.unwrap_or(0);
        let give_back = || {
            let mut given = self.given.lock().expect("given lock");
            *given = given.saturating_sub(charged);
            self.refund(charged);
        };
        let cwd = match &entry.cwd {
            Some(dir) => dir.clone(),
            None => {
                let dir = self.spec.work_dir.join(&req.name);
                if let Err(e) = std::fs::create_dir_all(&dir) {
                    give_back();
                    return Err(LeadError::Unavailable(format!(
                        "cannot make the teammate's directory: {e}"
                    )));
                }
                dir
            }
        };
        let model_policy = granted.model.as_ref().map(|m| {
            let mut p = ModelPolicy::new(vec![m.clone()]);
            p.budget_microdollars = granted.budget_microdollars;
            p
        });
        let settings = TeammateSettings {
            agent_type: Some(entry.name.clone()),
            model: granted.model.clone(),
            mode: Some(granted.mode),
            plan_mode_required: req.plan_mode_required,
            rules: granted.rules,
            auto_claim: entry.auto_claim,
            limits: entry.limits.clone(),
            model_policy,
            // The sub-agent definitions the lead was given (the manifest's).
            agents: self.spec.settings.agents.clone(),
            ..TeammateSettings::default()
        };
        let mut spawn = SpawnRequest::new(&req.name, &entry.component, &req.prompt, cwd);
        spawn.isolation = entry.isolation;
        spawn.settings = settings;
        match host.spawn(self.team.name(), spawn).await {
            Ok(info) => {
                self.spawned
                    .lock()
                    .expect("spawned lock")
                    .insert(info.name.clone(), entry.name.clone());
                Ok(info.agent_id)
            }
            Err(e) => {
                give_back();
                Err(unavailable(e))
            }
        }
    }
}
