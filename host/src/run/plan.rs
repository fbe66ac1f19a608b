//! What to run: a [`RunPlan`] is a loaded manifest, how the team comes to be
//! ([`Start`]), who leads it ([`Leader`]) and the run's limits.

use std::path::PathBuf;
use std::time::Duration;

use crate::layout::Protected;
use crate::manifest::Manifest;

/// How a run's team comes to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Start {
    /// Create it; refuse when it exists already.
    #[default]
    Fresh,
    /// Create it; an existing team left by a host that died (or by none of
    /// this machine) is deleted first. Never one a live host runs.
    Replace,
    /// Bring back the team a dead host left ([`crate::embed::Host::resume`])
    /// and spawn the manifest's teammates that never joined.
    Resume,
    /// Join the manifest's teammates to a team whose lead runs elsewhere,
    /// on a shared store: wait for the team, spawn into it, end when the
    /// lead has shut them down. Seeds, answers and deletes nothing.
    Join,
    /// Stand by for a team on a shared store and take over the teammates of
    /// any host whose lease expires; end when the lead has shut them down
    /// or the team is deleted. Seeds, answers and deletes nothing.
    Adopt,
}

impl Start {
    /// Whether the run is beside a lead that runs elsewhere (`Join`,
    /// `Adopt`).
    pub fn is_beside(self) -> bool {
        matches!(self, Start::Join | Start::Adopt)
    }
}

/// Who leads a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Leader {
    /// The person, or the embedding program: the manifest's `[[teammate]]`s
    /// are spawned, and the work is done when every task is completed.
    #[default]
    Person,
    /// A lead component (the `lead` world): it is started with the goal as
    /// its first message, spawns teammates from the manifest's
    /// `[[catalogue]]`, and the run ends when it deletes its team (or ends
    /// otherwise). `goal` and `component` win over the manifest's `[lead]`
    /// (`component` made absolute by the caller).
    Component {
        goal: Option<String>,
        component: Option<PathBuf>,
    },
}

/// A manifest's run, as the library runs it ([`super::Run::start`]).
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The manifest's file: its directory anchors the layout check, and
    /// messages that point back to it name it.
    pub manifest_file: PathBuf,
    /// The manifest, loaded ([`Manifest::load`]).
    pub manifest: Manifest,
    /// How the team comes to be.
    pub start: Start,
    /// Who leads it.
    pub leader: Leader,
    /// How long the work phase may take: from the last teammate's spawn, or
    /// from the lead component's start; beside a lead elsewhere (`Join`,
    /// `Adopt`), the whole run, spawns included.
    pub timeout: Duration,
    /// How long teammates get to approve the shutdown before they are
    /// killed.
    pub shutdown_timeout: Duration,
    /// Keep the team's files after the run (default: delete them).
    pub keep: bool,
    /// A failed turn does not fail the run (a replay drift, a crash and an
    /// open task still do).
    pub allow_failed_turns: bool,
    /// Paths no teammate's directory may hold, besides those the run adds
    /// itself: the home's, the manifest's, its components', the host's
    /// model files and the store's TLS and credential files.
    pub protected: Vec<Protected>,
}

impl RunPlan {
    /// A fresh run of `manifest` (loaded from `manifest_file`) with the
    /// CLI's defaults: led by the manifest's `[lead]` when it has one, else
    /// by the person; 300 s of work, 30 s for the shutdown, files deleted
    /// afterwards, a failed turn failing the run.
    pub fn new(manifest_file: impl Into<PathBuf>, manifest: Manifest) -> RunPlan {
        let leader = match manifest.lead {
            Some(_) => Leader::Component {
                goal: None,
                component: None,
            },
            None => Leader::Person,
        };
        RunPlan {
            manifest_file: manifest_file.into(),
            manifest,
            start: Start::Fresh,
            leader,
            timeout: Duration::from_secs(300),
            shutdown_timeout: Duration::from_secs(30),
            keep: false,
            allow_failed_turns: false,
            protected: Vec::new(),
        }
    }

    /// Loads the manifest at `file` ([`Manifest::load`]) into a fresh plan.
    pub fn load(file: impl Into<PathBuf>) -> anyhow::Result<RunPlan> {
        let file = file.into();
        let manifest = Manifest::load(&file)?;
        Ok(RunPlan::new(file, manifest))
    }

    /// Whether a component leads this run.
    pub fn is_led(&self) -> bool {
        matches!(self.leader, Leader::Component { .. })
    }
}
