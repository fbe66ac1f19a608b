//! [`Host::spawn_many`]: many teammates into one team, their registrations
//! sharing the config's writes.
//!
//! A spawn registers its member with one write of the team's config, which
//! holds every member. Spawns made at the same time share a write, but no
//! more of them than are in flight (16 at a time, as `teamhost run` started
//! a team before this), and at 10,000 teammates the config is megabytes:
//! its ~2,900 writes were a fifth of the CPU of spawning them. A batch known up front
//! needs few: its members are registered [`REGISTER_AT_ONCE`] to a write
//! (with their components loaded and directories checked on the same
//! blocking thread), and then started while the next chunk registers, in
//! groups of [`START_AT_ONCE`]: each group instantiated, its prompts and
//! spawn records written in one hand-off and one group commit, then its
//! runners started, each exactly as a single spawn starts it.
//!
//! Each request has its own result. One refused (its name, its directory,
//! its component, its layout) does not stop the others; a member whose
//! start fails is removed from the config again, as a single spawn does.
//! A request whose component lies in the directory of another request of
//! the same batch is refused as [`Host::spawn`] refuses one inside a
//! running teammate's directory: the batch's teammates are not running yet
//! when the layout is checked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures_util::stream::{self, StreamExt};

use super::spawn::Recording;
use super::starting::Start;
use super::{Host, SpawnRequest, TeammateInfo};
use crate::backends::assembly::{prepare_blocking, Prepared};
use crate::backends::{in_process, BackendKind, SpawnEnv};
use crate::error::{Error, Result};
use crate::store::{Member, Team};
use crate::teammate::Isolation;

/// Members registered in one write of the config.
const REGISTER_AT_ONCE: usize = 256;

/// Teammates started together (instantiated at once, their prompts in one
/// group commit): as many as `teamhost run` spawned at a time. Up to two
/// groups are in flight, so that one group instantiates while the other's
/// prompts are written (at the start both instantiate: 32 at once).
const START_AT_ONCE: usize = 16;

/// A request, by its place in the batch.
type Placed = (usize, SpawnRequest);

/// A request after its chunk's write, by its place: what its start needs,
/// or why it was not registered.
type Registered = (usize, Result<(SpawnRequest, Prepared, Member)>);

impl Host {
    /// Spawns every request of `reqs` into `team`, as [`Host::spawn`] would
    /// one by one, with the members registered many to a write of the
    /// config (see the module docs). Returns one result per request, in
    /// the order of `reqs`; the outer error is the team's (it does not
    /// exist, this host cannot hold its lease, or, with the in-process
    /// backend, it is being shut down: [`Host::shutdown_team`]), before any
    /// was spawned.
    /// Teammates of a backend other than in-process are spawned one by one,
    /// 16 at a time.
    ///
    /// Dropping the future part-way (a timeout around it) stops where it
    /// is: members already registered and not yet started stay in the
    /// config without a runner, up to two chunks of them, as one member
    /// does when a single [`Host::spawn`] is dropped between its
    /// registration and its start. A group whose prompts were being
    /// written when it was dropped finishes that write, so those members
    /// also have their prompts and spawn records (a resume brings them
    /// back). Run the batch to its end and stop the team instead.
    ///
    /// [`Host::shutdown_team`] during a batch (in-process) stops it before
    /// its next chunk or group (the stop waits, within its timeout, for the
    /// chunk registering and the groups starting then): the members not
    /// started yet are taken out of the config again and their results are
    /// [`Error::Spawn`] ("shutting down"); those started are stopped with
    /// the rest. With another backend each request is its own spawn.
    pub async fn spawn_many(
        &self,
        team: &str,
        reqs: Vec<SpawnRequest>,
    ) -> Result<Vec<Result<TeammateInfo>>> {
        let team = self.team(team)?;
        let names: Vec<String> = reqs.iter().map(|r| r.name.clone()).collect();
        let spawned = self.spawn_many_into(&team, reqs).await;
        for name in &names {
            self.joined(team.name(), name);
        }
        spawned
    }

    async fn spawn_many_into(
        &self,
        team: &Team,
        reqs: Vec<SpawnRequest>,
    ) -> Result<Vec<Result<TeammateInfo>>> {
        if self.chosen_backend().kind() != BackendKind::InProcess {
            // A process or a pane per teammate: its start, not the config's
            // write, is what a spawn waits on.
            let spawning = stream::iter(reqs).map(|req| self.spawn_into(team, req));
            return Ok(spawning.buffered(START_AT_ONCE).collect().await);
        }
        // Until the last group is in the index; a stop of the team begun
        // meanwhile ends the batch before its next chunk or group
        // (`starting.rs`).
        let start = self.inner.starts.begin(team.name())?;
        self.ensure_lease(team.name()).await?;
        let mut results: Vec<Option<Result<TeammateInfo>>> = reqs.iter().map(|_| None).collect();
        let mut admitted: Vec<Placed> = Vec::with_capacity(reqs.len());
        let host_paths = self.layout_checker();
        for (i, mut req) in reqs.into_iter().enumerate() {
            match self.admit_with(team, &mut req, &host_paths) {
                Ok(()) => admitted.push((i, req)),
                Err(e) => results[i] = Some(Err(e)),
            }
        }
        let mut chunks = Vec::new();
        let mut admitted = admitted.into_iter().peekable();
        while admitted.peek().is_some() {
            chunks.push(admitted.by_ref().take(REGISTER_AT_ONCE).collect::<Vec<_>>());
        }
        let mut chunks = chunks.into_iter();
        let mut registered = match chunks.next() {
            Some(chunk) => self.register_unless_closing(team, chunk, &start).await,
            None => Vec::new(),
        };
        loop {
            let next = chunks.next();
            // This chunk starts while the next one registers.
            let (started, next) = tokio::join!(self.start_chunk(team, registered, &start), async {
                match next {
                    Some(chunk) => Some(self.register_unless_closing(team, chunk, &start).await),
                    None => None,
                }
            });
            for (i, result) in started {
                results[i] = Some(result);
            }
            match next {
                Some(more) => registered = more,
                None => break,
            }
        }
        Ok(results
            .into_iter()
            .map(|r| r.expect("every request has a result"))
            .collect())
    }

    /// [`Host::register`], unless a stop of the team began: then every
    /// request of `chunk` is refused, nothing written.
    async fn register_unless_closing(
        &self,
        team: &Team,
        chunk: Vec<Placed>,
        start: &Start,
    ) -> Vec<Registered> {
        if start.closing() {
            return chunk
                .into_iter()
                .map(|(i, _)| (i, Err(shutting_down(team))))
                .collect();
        }
        self.register(team, chunk).await
    }

    /// Prepares `chunk`'s requests (directory, component) and registers
    /// those that pass in one write of the config, all on one blocking
    /// thread.
    async fn register(&self, team: &Team, chunk: Vec<Placed>) -> Vec<Registered> {
        let (runtime, team) = (self.inner.runtime.clone(), team.clone());
        let places: Vec<usize> = chunk.iter().map(|(i, _)| *i).collect();
        let done = crate::blocking::run("registering teammates", move || {
            let mut prepared: Vec<Result<Prepared>> = chunk
                .iter()
                .map(|(_, req)| prepare_blocking(&runtime, req))
                .collect();
            refuse_components_in_each_others_dirs(&chunk, &mut prepared);
            let entries: Vec<_> = chunk
                .iter()
                .zip(&prepared)
                .filter_map(|((_, req), p)| p.as_ref().ok().map(|p| in_process::entry(req, p)))
                .collect();
            // A chunk with nothing to register writes nothing.
            let written = match entries.is_empty() {
                true => Ok(Vec::new()),
                false => team.add_members(entries),
            };
            let mut added = match written {
                Ok(added) => added.into_iter(),
                Err(e) => {
                    let why = format!("the team's config could not be written: {e}");
                    return chunk
                        .into_iter()
                        .map(|(i, _)| (i, Err(Error::Spawn(why.clone()))))
                        .collect();
                }
            };
            chunk
                .into_iter()
                .zip(prepared)
                .map(|((i, req), p)| {
                    let member = p.and_then(|p| {
                        let member = added.next().expect("one entry per prepared request");
                        member.map(|m| (req, p, m))
                    });
                    (i, member)
                })
                .collect()
        })
        .await;
        match done {
            Ok(registered) => registered,
            // A panic: whether any member was written is not known, and
            // none of them is started.
            Err(e) => {
                let why = e.to_string();
                places
                    .into_iter()
                    .map(|i| (i, Err(Error::Spawn(why.clone()))))
                    .collect()
            }
        }
    }

    /// Starts the registered members of a chunk, in groups of
    /// [`START_AT_ONCE`], one group's prompts written while the next one
    /// is instantiated ([`Host::start_group`]).
    async fn start_chunk(
        &self,
        team: &Team,
        registered: Vec<Registered>,
        start: &Start,
    ) -> Vec<(usize, Result<TeammateInfo>)> {
        let mut groups = Vec::new();
        let mut registered = registered.into_iter().peekable();
        while registered.peek().is_some() {
            groups.push(registered.by_ref().take(START_AT_ONCE).collect::<Vec<_>>());
        }
        let starting = stream::iter(groups).map(|group| async move {
            if start.closing() {
                return refuse_group(team, group).await;
            }
            self.start_group(team, group).await
        });
        let started: Vec<Vec<_>> = starting.buffer_unordered(2).collect().await;
        started.into_iter().flatten().collect()
    }

    /// Starts a group of registered members: each instantiated, then the
    /// prompts (and spawn records) of all written in one hand-off and one
    /// group commit, then each runner started, as [`Host::spawn`] starts
    /// one. A group, not the chunk: runners started by the hundred at once
    /// each hand their first poll to a blocking thread at once, and the
    /// pool grows a thread for each.
    async fn start_group(
        &self,
        team: &Team,
        group: Vec<Registered>,
    ) -> Vec<(usize, Result<TeammateInfo>)> {
        let making = group.into_iter().map(|(i, member)| async move {
            let made = match member {
                Ok((req, prepared, member)) => {
                    self.instantiate_one(team, req, prepared, member).await
                }
                Err(e) => Err(e),
            };
            (i, made)
        });
        let made: Vec<(usize, Result<Made<'_>>)> = futures_util::future::join_all(making).await;
        let mut results = Vec::with_capacity(made.len());
        let mut ready = Vec::with_capacity(made.len());
        for (i, made) in made {
            match made {
                Ok(made) => ready.push((i, made)),
                Err(e) => results.push((i, Err(e))),
            }
        }
        // Apart: the instances go to the blocking thread, and come back.
        let mut starts = Vec::with_capacity(ready.len());
        let mut rest = Vec::with_capacity(ready.len());
        for (
            i,
            Made {
                made,
                recording,
                env,
            },
        ) in ready
        {
            let name = made.member_name().to_string();
            starts.push((made, env.before_start.clone()));
            rest.push((i, name, recording, env));
        }
        let delivering = team.clone();
        let delivered = crate::store::blocking("delivering the prompts", move || {
            Ok(in_process::deliver_prompts(&delivering, starts))
        })
        .await;
        match delivered {
            Ok(delivered) => {
                for ((i, _, recording, env), (made, prompted)) in rest.into_iter().zip(delivered) {
                    let spawned = prompted.map(|()| made.run(&env));
                    results.push((i, recording.finish(self, team, spawned)));
                }
            }
            // A panic on the way: whose prompt is in is not known, and
            // none of them is started.
            Err(e) => {
                let why = e.to_string();
                for (i, name, recording, _) in rest {
                    in_process::undo_registration(team, &name);
                    let failed = Err(Error::Spawn(why.clone()));
                    results.push((i, recording.finish(self, team, failed)));
                }
            }
        }
        results
    }

    /// A registered member's instance, with what its start needs: its
    /// spawn record's hook and its environment, as [`Host::spawn`] makes
    /// them.
    async fn instantiate_one(
        &self,
        team: &Team,
        req: SpawnRequest,
        prepared: Prepared,
        member: Member,
    ) -> Result<Made<'_>> {
        tracing::debug!(teammate = %member.name, "spawning (many)");
        let recording = Recording::new(self, team, &req, BackendKind::InProcess);
        let mut env = match self.spawn_env(team) {
            Ok(env) => env,
            Err(e) => {
                in_process::undo_registration(team, &member.name);
                return Err(e);
            }
        };
        env.before_start = Some(recording.hook());
        let made = in_process::instantiate_registered(&env, team, req, prepared, member).await?;
        Ok(Made {
            made,
            recording,
            env,
        })
    }
}

/// Why a batch's member was not started: its team's stop began first.
fn shutting_down(team: &Team) -> Error {
    Error::Spawn(format!(
        "the team {:?} began shutting down before this teammate started: it was not started",
        team.name()
    ))
}

/// Refuses a registered group whose team's stop began: each member is
/// taken out of the config again (as a failed start is, on a blocking
/// thread), none started.
async fn refuse_group(team: &Team, group: Vec<Registered>) -> Vec<(usize, Result<TeammateInfo>)> {
    let names: Vec<String> = group
        .iter()
        .filter_map(|(_, m)| m.as_ref().ok().map(|(_, _, m)| m.name.clone()))
        .collect();
    let undoing = team.clone();
    let undone = crate::store::blocking("undoing a refused group's registrations", move || {
        for name in &names {
            in_process::undo_registration(&undoing, name);
        }
        Ok(())
    })
    .await;
    if let Err(e) = undone {
        tracing::error!(team = %team.name(), error = %e, "could not undo a refused group's registrations");
    }
    group
        .into_iter()
        .map(|(i, member)| (i, member.and(Err(shutting_down(team)))))
        .collect()
}

/// A member of a chunk, instantiated and waiting for its prompt.
struct Made<'a> {
    made: in_process::Instantiated,
    recording: Recording,
    env: SpawnEnv<'a>,
}

/// Refuses, in `prepared`, each request whose component lies in the
/// directory of another request of `chunk` that works in its own directory
/// (a worktree teammate's is made later, under the home): that teammate
/// could change what the host runs.
fn refuse_components_in_each_others_dirs(chunk: &[Placed], prepared: &mut [Result<Prepared>]) {
    // By place in the chunk: the names are not unique yet.
    let mut dirs: HashMap<&Path, Vec<(usize, &str)>> = HashMap::new();
    for (k, ((_, req), p)) in chunk.iter().zip(prepared.iter()).enumerate() {
        if let (Ok(p), Isolation::None) = (p, req.isolation) {
            dirs.entry(p.dir.as_path())
                .or_default()
                .push((k, &req.name));
        }
    }
    let mut refusals: Vec<(usize, String)> = Vec::new();
    for (k, (_, req)) in chunk.iter().enumerate() {
        if prepared[k].is_err() {
            continue;
        }
        let component: PathBuf = crate::layout::canonical(&req.component);
        let protected = [crate::layout::Protected::new(
            crate::layout::Kind::Component,
            &req.component,
        )];
        let holder = component.ancestors().find_map(|a| {
            dirs.get(a)?
                .iter()
                .find(|(other, _)| *other != k)
                .map(|(_, name)| (*name, a))
        });
        if let Some((name, dir)) = holder {
            if let Err(why) = crate::layout::check(name, dir, &protected) {
                refusals.push((k, why));
            }
        }
    }
    for (k, why) in refusals {
        prepared[k] = Err(Error::Spawn(why));
    }
}
