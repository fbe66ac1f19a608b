//! Running a manifest's team until its work is done, as a library
//! capability: the lifecycle `teamhost run` drives, for any tokio program.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use teamhost::embed::Host;
//! use teamhost::home::Home;
//! use teamhost::run::{Run, RunPlan, Silent};
//!
//! let host = Host::new(Home::new("/tmp/teamhost-home"))?;
//! let plan = RunPlan::load("team.toml")?;
//! let mut run = Run::start(&host, plan, &Silent).await?;
//! let ctrl_c = async {
//!     let _ = tokio::signal::ctrl_c().await;
//!     "Ctrl-C"
//! };
//! let ended = run.until_done(&Silent, ctrl_c).await?;
//! let shutdown = run.shut_down(&Silent, &ended).await?;
//! let finished = run.finish(ended, shutdown).await?;
//! if let Some(why) = finished.error() {
//!     anyhow::bail!("the run failed: {why}");
//! }
//! # Ok(()) }
//! ```
//!
//! A run has four phases, each a method of [`Run`]; a caller that stops
//! between two (a forced stop, a store that does not answer) leaves the team
//! as it is, to resume or delete:
//!
//! 1. [`Run::start`]: check the layout, the existing team ([`Start`]) and
//!    `[approvals]` ([`Run::prepare`], which creates nothing), then create
//!    and seed the team, find the one to resume, or start the lead
//!    component ([`Prepared::begin`]); serve `[approvals]`.
//! 2. [`Run::until_done`]: spawn the teammates, wait for the work; returns
//!    why it ended ([`Ended`]).
//! 3. [`Run::shut_down`]: the shutdown protocol.
//! 4. [`Run::finish`]: what the run did ([`Finished`], with whether it
//!    succeeded), read before the team's files go; delete unless kept.
//!
//! A run is led by the person (or the embedding program), or by a lead
//! component ([`Leader`]): then the lead spawns the teammates from the
//! manifest's `[[catalogue]]` and the run ends when it deletes its team.
//! A led run killed mid-work resumes led ([`Start::Resume`]): its teammates
//! and its lead come back, the lead with its seat as this machine kept it.
//!
//! Beside a lead that runs elsewhere, on a shared store ([`Start::Join`],
//! [`Start::Adopt`]), a run seeds, answers and deletes nothing.
//!
//! What a run says goes to a [`Narrator`]; teammates' own events are the
//! host's ([`crate::embed::Host::events`]).
//!
//! # Layout
//!
//! | file | owns |
//! |---|---|
//! | `plan.rs` | what to run: [`RunPlan`], [`Start`] |
//! | `lifecycle.rs` | [`Run`]'s four phases, [`Prepared`] and [`Finished`] |
//! | `led.rs` | a run led by a component: its lead's spec, waiting for it, stopping what it left |
//! | `last_look.rs` | a led run's last look at its team, before its lead deletes it |
//! | `lead_spec.rs` | the manifest's `[lead]` and `[[catalogue]]` as `embed::LeadSpec` |
//! | `narrator.rs` | where a run's lines go: [`Narrator`], [`Silent`] |
//! | `layout.rs` | the layout check and the default directories |
//! | `existing.rs` | a team that exists already: refused, replaced or resumed |
//! | `seed.rs` | a fresh run's tasks and their dependencies |
//! | `spawn.rs` | compiling the components, spawning the teammates as one batch (`Host::spawn_many`) |
//! | `wait.rs` | the work phase: done, stuck, every teammate stopped, timed out, stopped |
//! | `beside.rs` | runs beside a lead that runs elsewhere: join its team, or stand by and adopt the teammates of a host that died |
//! | `elsewhere.rs` | after a resume: the shutdown requests to teammates another host took over |
//! | `ended.rs` | how the work ended ([`Ended`]) and what makes a run fail ([`problems`]) |
//! | `turn_failures.rs` | failed turns and replay drifts, read from the store |
//! | `messages.rs` | the messages exchanged, counted |
//! | `models.rs` | the host's model broker for a manifest's `[model]`: [`model_access`] |

mod beside;
mod elsewhere;
mod ended;
mod existing;
mod last_look;
mod layout;
mod lead_spec;
mod led;
mod lifecycle;
mod messages;
mod models;
mod narrator;
mod plan;
mod seed;
mod spawn;
mod turn_failures;
mod wait;

pub use ended::{describe_state, problems, Ended};
pub use existing::{claim, existing_team};
pub use layout::{check_lead_dirs, check_teammates, layout_checker, make_default_dirs};
pub use lifecycle::{Finished, Prepared, Run};
pub use messages::{count_messages, MessageCounts};
pub use models::{model_access, ModelChoice};
pub use narrator::{Narrator, Silent};
pub use plan::{Leader, RunPlan, Start};
pub use turn_failures::{FailedTurns, ReplayDrift, TurnFailures};
