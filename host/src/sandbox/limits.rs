//! Resource limits of one teammate, with their defaults. Plain data: the
//! runtime enforces them (memory through the store limiter and the tree's
//! pool, CPU through the epoch deadline, wall time around each turn, sizes
//! and counts at each call, the disk as the guest writes).
//!
//! **One budget per teammate.** Every limit marked *tree* below is one
//! budget for the teammate and everything it starts: a sub-agent (and its
//! sub-agents) draws from its root teammate's budget
//! ([`crate::runtime::TreeBudget`]), never from fresh ones. Limits marked
//! *life* accumulate over the teammate's life, across a crash and a
//! `--resume` too (kept in the host's home after each turn,
//! `home::kept::SpentRecord`; a crash loses at most what the cut turn
//! spent, which the per-turn limits bound). The others hold per instance or
//! per turn.
//!
//! | limit | default | scope | breach |
//! |---|---|---|---|
//! | `memory_bytes` | 64 MiB | each linear memory | trap: the agent fails, "memory limit" |
//! | `memory_total_bytes` | 256 MiB | tree | the linear memory of every instance of the tree together: a growth past it traps ("memory limit … ([teammate.limits] memory_total_mb)"); a sub-agent whose instance does not fit is refused (`unavailable`, naming the limit) |
//! | `cpu_per_turn` | 60 s | turn | trap: "CPU limit" |
//! | `wall_per_turn` | 10 min | turn | the turn is abandoned, the teammate fails: "wall-time limit" (time waiting on the model is not counted: the model policy bounds that) |
//! | `max_message_bytes` | 1 MiB | each call | typed `invalid` error; nothing is sent |
//! | `max_team_bytes_total` | 64 MiB | tree, life | bytes the tree writes into the team's store: messages and `mailbox.deliver` (text + summary), broadcasts × recipients, plans, task texts (create and update); one more traps: "team-bytes limit" |
//! | `max_tool_output_bytes` | 256 KiB | each call | output cut, marked `truncated` |
//! | `ask_timeout` | 5 min | each call | the waiting tool call is denied |
//! | `max_pending_requests` | 1 | instance | typed `denied` error (a call waits for its answer, so one is all a single-threaded guest can have) |
//! | `max_open_resources` | 1,024 | instance | WASI handles (descriptors, streams, pollables) held at once; one more traps: "descriptor limit" |
//! | [`MAX_RANDOM_BYTES`] | 64 KiB | each call | bytes one `wasi:random` call (`get-random-bytes`, `get-insecure-random-bytes`) may ask for; more traps: "random limit" (a fixed limit) |
//! | `disk_bytes` | 1 GiB | tree | bytes of files in the directories of the tree (the teammate's and its sub-agents' worktrees), counted as the guest writes: a WASI write that would pass it is refused (`insufficient-space`, ENOSPC) after a fresh measurement, and the lead is told; a Bash call is watched while it runs and its process group killed when the directories pass it ("disk limit"); Write/Edit refuse in advance (`invalid`); measured again after each Bash call and each turn, a breach fails the teammate: "disk limit" |
//! | `disk_walk_entries` | 200,000 | tree | entries one disk measurement visits; more is a breach as well |
//! | `max_log_bytes` | 8 MiB | instance | the guest's stdout/stderr log: cut there with one note line, later output dropped |
//! | `max_messages_per_turn` / `max_messages_total` | 100 / 10,000 | turn / tree, life | direct messages (`messaging.send`, `mailbox.deliver`, `request-plan-approval`, a `tasks.update` giving the task to another member); one more traps: "coordination limit" |
//! | `max_broadcasts_per_turn` / `max_broadcasts_total` | 10 / 1,000 | turn / tree, life | `messaging.broadcast` calls (each writes every inbox of the team); one more traps: "coordination limit" |
//! | `max_tasks_per_turn` / `max_tasks_total` | 100 / 1,000 | turn / tree, life | `tasks.create` calls; one more traps: "coordination limit" |
//! | `max_state_saves_per_turn` / `max_state_saves_total` | 20 / 2,000 | turn / life | `state.save` and `state.clear` calls (each one a synced write in the host's home); one more traps: "state-save limit" |
//! | `max_subagents_total` | 32 | tree, life | sub-agents started by the teammate and all its sub-agents together (depth and running-at-once limits apply per agent besides); one more is refused (`denied`, naming the limit) |
//! | `[lead] max_teammates` | 8 | lead, at once | a lead component's teammates at once; one more spawn is refused (`denied`, naming the key) |
//! | `[lead] max_spawns_total` | 32 | lead, life | teammates a lead component spawns over its life, shut-down ones included; one more is refused (`denied`, naming the key) |
//! | `[lead] max_refused_answers_per_turn` / `max_refused_answers_total` | 10 / 200 | lead: turn / life | a lead's answers refused (escalated to the person) that are recorded as escalations; later ones are refused (`denied`, naming the key) without another record |
//! | the lead's seat texts | `max_message_bytes`, `max_team_bytes_total` of `[lead.limits]` | lead, each call / life | the team description, spawn prompts, shutdown and denial reasons, plan feedback and replacement inputs a lead's seat writes: each held to `max_message_bytes` (`invalid`), all counted with the lead's own team bytes (`denied` past them); a member entry in `config.json` keeps at most 2,000 characters of its prompt |
//!
//! Model tokens and cost are bounded by the model policy, whose meter a
//! teammate's sub-agents share ([`crate::model`]). Bash's process tree has
//! its own bounds per call ([`crate::tools::ToolLimits`]).
//!
//! The coordination limits bound what a teammate can make the rest of the
//! team (the lead above all) read and store. A real turn sends a handful of
//! messages and creates a few tasks, so 100 per turn leaves room for a
//! fan-out of work while cutting a loop off at once; a broadcast costs one
//! inbox write per teammate, hence ten times fewer. The totals bound a
//! teammate that floods a little every turn; `max_team_bytes_total` bounds
//! what those acts can store (without it, 10,000 messages of 1 MiB are
//! 10 GiB). Calls are counted when they pass the rules, before they run,
//! whether or not they succeed; answering a shutdown request is never
//! counted (it must always be possible).

use std::time::Duration;

/// The most bytes one `wasi:random` call may ask for (`get-random-bytes`,
/// `get-insecure-random-bytes`); one more traps, and the teammate fails
/// with "random limit". A fixed limit, not a setting.
///
/// The host builds the bytes before the guest's memory limit sees them,
/// one draw per byte on a runtime worker, and a host call is not charged
/// to the turn's CPU: at wasmtime-wasi's own bound (64 MiB) one call held
/// a worker for about half a second and 64 MiB of the host's memory
/// outside every limit, so a guest calling in a loop stalled the other
/// teammates of the process. 64 KiB is what the Web Crypto API gives per
/// `getRandomValues` call (a JavaScript guest cannot ask for more), far
/// above what language runtimes draw (wasi-libc's `getentropy` takes at
/// most 256 bytes, Rust's `getrandom` 0.3 a `u64` at a time), and costs
/// well under a millisecond. A guest that fills a bigger buffer in one
/// call fails (`getrandom` 0.2 through the preview-1 adapter asks for the
/// whole buffer at once): draw in pieces of 64 KiB.
pub const MAX_RANDOM_BYTES: u64 = 64 << 10;

/// Limits of one teammate. `Limits::default()` gives the table above.
///
/// Serialised as JSON (durations as `{secs, nanos}`, missing keys at their
/// defaults) for the `--limits` flag a host gives a teammate it starts in
/// another process.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest linear memory of one instance, in bytes.
    pub memory_bytes: usize,
    /// Linear memory of every instance of the teammate's tree together (the
    /// teammate and all its sub-agents), in bytes.
    pub memory_total_bytes: usize,
    /// CPU a single turn may use (counted in epoch ticks of 10 ms while the
    /// guest runs).
    pub cpu_per_turn: Duration,
    /// Wall time a single turn may take, waiting for approvals included,
    /// waiting on the model not (see [`crate::model::ModelClock`]).
    pub wall_per_turn: Duration,
    /// Largest message, plan or broadcast a teammate may send, in bytes.
    pub max_message_bytes: usize,
    /// Bytes the teammate's tree may write into the team's store over its
    /// life (messages, broadcasts × recipients, plans, task texts).
    pub max_team_bytes_total: u64,
    /// Largest tool output (file read, search results, each Bash stream).
    pub max_tool_output_bytes: usize,
    /// How long a tool call waits for the lead's answer before it is denied.
    pub ask_timeout: Duration,
    /// Permission requests a teammate may have waiting at once.
    pub max_pending_requests: usize,
    /// WASI resources (file descriptors, streams, pollables, directory
    /// iterators) the guest may hold at once: the cap of its store's
    /// `ResourceTable`.
    pub max_open_resources: usize,
    /// Bytes the files of the teammate's directory may take, all together
    /// (apparent sizes, so a sparse file counts at its length).
    pub disk_bytes: u64,
    /// Directory entries one disk measurement walks before it calls the
    /// directory over its budget.
    pub disk_walk_entries: usize,
    /// Largest captured stdout/stderr log, in bytes.
    pub max_log_bytes: u64,
    /// Direct messages a teammate may send in one turn.
    pub max_messages_per_turn: u32,
    /// Direct messages a teammate may send in its life.
    pub max_messages_total: u32,
    /// Broadcasts a teammate may send in one turn.
    pub max_broadcasts_per_turn: u32,
    /// Broadcasts a teammate may send in its life.
    pub max_broadcasts_total: u32,
    /// Tasks a teammate may create in one turn.
    pub max_tasks_per_turn: u32,
    /// Tasks a teammate may create in its life.
    pub max_tasks_total: u32,
    /// `state.save`/`state.clear` calls in one turn.
    pub max_state_saves_per_turn: u32,
    /// `state.save`/`state.clear` calls in the teammate's life.
    pub max_state_saves_total: u32,
    /// Sub-agents the teammate's whole tree may start in its life.
    pub max_subagents_total: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            memory_total_bytes: 256 << 20,
            cpu_per_turn: Duration::from_secs(60),
            wall_per_turn: Duration::from_secs(600),
            max_message_bytes: 1 << 20,
            max_team_bytes_total: 64 << 20,
            max_tool_output_bytes: 256 << 10,
            ask_timeout: Duration::from_secs(300),
            max_pending_requests: 1,
            max_open_resources: 1024,
            disk_bytes: 1 << 30,
            disk_walk_entries: 200_000,
            max_log_bytes: 8 << 20,
            max_messages_per_turn: 100,
            max_messages_total: 10_000,
            max_broadcasts_per_turn: 10,
            max_broadcasts_total: 1_000,
            max_tasks_per_turn: 100,
            max_tasks_total: 1_000,
            max_state_saves_per_turn: 20,
            max_state_saves_total: 2_000,
            max_subagents_total: 32,
        }
    }
}

impl Limits {
    /// Checks a message size; the error says which limit and by how much.
    pub fn check_message(&self, what: &str, len: usize) -> Result<(), String> {
        if len > self.max_message_bytes {
            return Err(format!(
                "{what} is {len} bytes; the limit is {} bytes (max_message_bytes)",
                self.max_message_bytes
            ));
        }
        Ok(())
    }
}

/// The acts on the team that the coordination limits count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TeamAct {
    /// A message into one other inbox.
    Message,
    /// A message into every other inbox.
    Broadcast,
    /// A new task in the shared list.
    TaskCreate,
}

/// How many [`TeamAct`]s of each kind a teammate has made (in one turn, or
/// in all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamActs {
    /// Direct messages.
    pub messages: u32,
    /// Broadcasts.
    pub broadcasts: u32,
    /// Tasks created.
    pub tasks: u32,
}

impl TeamActs {
    fn slot(&mut self, act: TeamAct) -> &mut u32 {
        match act {
            TeamAct::Message => &mut self.messages,
            TeamAct::Broadcast => &mut self.broadcasts,
            TeamAct::TaskCreate => &mut self.tasks,
        }
    }
}

impl Limits {
    /// Counts one `act` in `turn` and `total`, or refuses it when it would
    /// pass the per-turn or the total limit (then neither count changes).
    /// The error is the trap message: it starts with `coordination limit:`
    /// and names the manifest key.
    pub fn count_act(
        &self,
        act: TeamAct,
        turn: &mut TeamActs,
        total: &mut TeamActs,
    ) -> Result<(), String> {
        let (what, per_turn, in_all) = match act {
            TeamAct::Message => (
                ("direct messages", "max_messages"),
                self.max_messages_per_turn,
                self.max_messages_total,
            ),
            TeamAct::Broadcast => (
                ("broadcasts", "max_broadcasts"),
                self.max_broadcasts_per_turn,
                self.max_broadcasts_total,
            ),
            TeamAct::TaskCreate => (
                ("tasks created", "max_tasks"),
                self.max_tasks_per_turn,
                self.max_tasks_total,
            ),
        };
        let ((noun, key), this_turn, so_far) = (what, *turn.slot(act), *total.slot(act));
        if this_turn >= per_turn {
            return Err(format!(
                "coordination limit: more than {per_turn} {noun} in one turn \
                 ({key}_per_turn); the teammate is stopped"
            ));
        }
        if so_far >= in_all {
            return Err(format!(
                "coordination limit: more than {in_all} {noun} in all ({key}_total); the \
                 teammate is stopped"
            ));
        }
        *turn.slot(act) += 1;
        *total.slot(act) += 1;
        Ok(())
    }
}

impl Limits {
    /// Adds `bytes` that `what` writes into the team's store to `spent` (the
    /// tree's life total), or refuses it when the total would pass
    /// [`Limits::max_team_bytes_total`] (then `spent` does not change). The
    /// error is the trap message: it starts with `team-bytes limit:` and
    /// names the manifest key.
    pub fn count_team_bytes(&self, what: &str, bytes: u64, spent: &mut u64) -> Result<(), String> {
        let after = spent.saturating_add(bytes);
        if after > self.max_team_bytes_total {
            return Err(format!(
                "team-bytes limit: {what} ({bytes} bytes) would bring what this teammate and its \
                 sub-agents wrote to the team to {after} bytes, more than {} \
                 ([teammate.limits] team_total_mb); the teammate is stopped",
                self.max_team_bytes_total
            ));
        }
        *spent = after;
        Ok(())
    }

    /// Counts one `state.save`/`state.clear` in `turn` and `total`, or
    /// refuses it when it would pass the per-turn or the life limit (then
    /// neither count changes). The error starts with `state-save limit:` and
    /// names the manifest key.
    pub fn count_state_save(&self, turn: &mut u32, total: &mut u32) -> Result<(), String> {
        if *turn >= self.max_state_saves_per_turn {
            return Err(format!(
                "state-save limit: more than {} state saves in one turn \
                 (max_state_saves_per_turn); the teammate is stopped",
                self.max_state_saves_per_turn
            ));
        }
        if *total >= self.max_state_saves_total {
            return Err(format!(
                "state-save limit: more than {} state saves in all (max_state_saves_total); the \
                 teammate is stopped",
                self.max_state_saves_total
            ));
        }
        *turn += 1;
        *total += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_act_past_the_per_turn_limit_is_refused_naming_the_key() {
        let l = Limits {
            max_broadcasts_per_turn: 2,
            ..Limits::default()
        };
        let (mut turn, mut total) = (TeamActs::default(), TeamActs::default());
        for _ in 0..2 {
            l.count_act(TeamAct::Broadcast, &mut turn, &mut total)
                .unwrap();
        }
        let e = l
            .count_act(TeamAct::Broadcast, &mut turn, &mut total)
            .unwrap_err();
        assert_eq!(
            e,
            "coordination limit: more than 2 broadcasts in one turn \
             (max_broadcasts_per_turn); the teammate is stopped"
        );
        assert_eq!(turn.broadcasts, 2, "a refused act is not counted");
        // Other acts have their own counts.
        l.count_act(TeamAct::Message, &mut turn, &mut total)
            .unwrap();
        // A new turn starts from zero.
        let mut next = TeamActs::default();
        l.count_act(TeamAct::Broadcast, &mut next, &mut total)
            .unwrap();
        assert_eq!(total.broadcasts, 3);
    }

    #[test]
    fn the_total_limit_holds_across_turns() {
        let l = Limits {
            max_tasks_total: 3,
            ..Limits::default()
        };
        let mut total = TeamActs::default();
        for _ in 0..3 {
            let mut turn = TeamActs::default();
            l.count_act(TeamAct::TaskCreate, &mut turn, &mut total)
                .unwrap();
        }
        let e = l
            .count_act(TeamAct::TaskCreate, &mut TeamActs::default(), &mut total)
            .unwrap_err();
        assert!(e.starts_with("coordination limit: "), "{e}");
        assert!(
            e.contains("more than 3 tasks created in all (max_tasks_total)"),
            "{e}"
        );
        assert_eq!(total.tasks, 3);
    }

    #[test]
    fn the_default_coordination_limits_are_the_documented_ones() {
        let l = Limits::default();
        assert_eq!(
            (
                l.max_messages_per_turn,
                l.max_broadcasts_per_turn,
                l.max_tasks_per_turn
            ),
            (100, 10, 100)
        );
        assert_eq!(
            (
                l.max_messages_total,
                l.max_broadcasts_total,
                l.max_tasks_total
            ),
            (10_000, 1_000, 1_000)
        );
    }

    #[test]
    fn a_message_over_the_limit_is_refused_with_both_sizes() {
        let l = Limits {
            max_message_bytes: 10,
            ..Limits::default()
        };
        assert!(l.check_message("message", 10).is_ok());
        let e = l.check_message("message", 11).unwrap_err();
        assert!(e.contains("11 bytes") && e.contains("10 bytes"), "{e}");
    }

    #[test]
    fn team_bytes_past_the_total_are_refused_and_not_counted() {
        let l = Limits {
            max_team_bytes_total: 100,
            ..Limits::default()
        };
        let mut spent = 0;
        l.count_team_bytes("a message", 60, &mut spent).unwrap();
        l.count_team_bytes("a message", 40, &mut spent).unwrap();
        let e = l.count_team_bytes("a message", 1, &mut spent).unwrap_err();
        assert!(e.starts_with("team-bytes limit: "), "{e}");
        assert!(
            e.contains("[teammate.limits] team_total_mb") && e.contains("101"),
            "{e}"
        );
        assert_eq!(spent, 100);
    }

    #[test]
    fn state_saves_are_counted_per_turn_and_in_all() {
        let l = Limits {
            max_state_saves_per_turn: 2,
            max_state_saves_total: 3,
            ..Limits::default()
        };
        let (mut turn, mut total) = (0, 0);
        l.count_state_save(&mut turn, &mut total).unwrap();
        l.count_state_save(&mut turn, &mut total).unwrap();
        let e = l.count_state_save(&mut turn, &mut total).unwrap_err();
        assert!(e.contains("(max_state_saves_per_turn)"), "{e}");
        let mut next = 0;
        l.count_state_save(&mut next, &mut total).unwrap();
        let e = l.count_state_save(&mut 0, &mut total).unwrap_err();
        assert!(e.contains("(max_state_saves_total)"), "{e}");
        assert_eq!(total, 3);
    }
}
