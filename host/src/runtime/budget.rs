//! [`TreeBudget`]: the budgets one teammate shares with everything it
//! starts. A teammate's sub-agents (and theirs) hold the same `Arc` as the
//! teammate, so what any of them spends is gone for all: linear memory (a
//! pool every instance's store limiter draws from), sub-agents started,
//! coordination acts and bytes written to the team over the tree's life,
//! `state.save` calls, and the disk of the tree's directories
//! ([`DiskMeter`]). The values are the root teammate's
//! [`Limits`](crate::sandbox::Limits); the table of defaults is in
//! [`crate::sandbox::limits`].
//!
//! What accumulates over the life is kept in the host's home after each
//! turn that spent something ([`TreeBudget::keep_in`],
//! [`TreeBudget::save_life`]): a teammate resumed after a crash goes on
//! from there ([`TreeBudget::restore`]), not from zero.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::disk_meter::DiskMeter;
use crate::home::kept::{LifeSpent, SpentRecord};
use crate::sandbox::{Limits, TeamAct, TeamActs};
use crate::tools::{DiskBudget, ToolBox};

/// One teammate's budgets, shared by its whole tree. Cheap to share
/// (`Arc`); every method is safe to call from any instance of the tree.
pub struct TreeBudget {
    limits: Limits,
    /// Bytes of linear memory the tree's instances hold now.
    memory: AtomicUsize,
    /// Sub-agents started over the tree's life.
    subagents: AtomicU32,
    spent: Mutex<Spent>,
    disk: Arc<DiskMeter>,
    /// Where the life's spending is kept, and what was kept last.
    kept: OnceLock<(SpentRecord, Mutex<LifeSpent>)>,
}

/// What accumulates over the tree's life.
#[derive(Debug, Default)]
struct Spent {
    acts: TeamActs,
    team_bytes: u64,
    state_saves: u32,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TreeBudget {
    /// The budgets of a teammate with `limits`, whose directory `tools`
    /// works in. Nothing is spent yet.
    pub fn new(limits: &Limits, tools: Arc<ToolBox>) -> Arc<TreeBudget> {
        let disk = DiskMeter::new(
            DiskBudget {
                bytes: limits.disk_bytes,
                entries: limits.disk_walk_entries,
            },
            tools,
        );
        Arc::new(TreeBudget {
            limits: limits.clone(),
            memory: AtomicUsize::new(0),
            subagents: AtomicU32::new(0),
            spent: Mutex::new(Spent::default()),
            disk,
            kept: OnceLock::new(),
        })
    }

    /// What the tree has spent over its life so far.
    pub fn life(&self) -> LifeSpent {
        let spent = lock(&self.spent);
        LifeSpent {
            subagents: self.subagents.load(Ordering::SeqCst),
            messages: spent.acts.messages,
            broadcasts: spent.acts.broadcasts,
            tasks: spent.acts.tasks,
            team_bytes: spent.team_bytes,
            state_saves: spent.state_saves,
        }
    }

    /// Goes on from what an earlier life of the teammate spent (a resume).
    /// Call it before the tree spends anything.
    pub fn restore(&self, earlier: LifeSpent) {
        self.subagents.store(earlier.subagents, Ordering::SeqCst);
        let mut spent = lock(&self.spent);
        spent.acts = TeamActs {
            messages: earlier.messages,
            broadcasts: earlier.broadcasts,
            tasks: earlier.tasks,
        };
        spent.team_bytes = earlier.team_bytes;
        spent.state_saves = earlier.state_saves;
    }

    /// Keeps the life's spending in `record` from now on
    /// ([`TreeBudget::save_life`]); the first call wins. What is spent
    /// now counts as kept.
    pub fn keep_in(&self, record: SpentRecord) {
        let _ = self.kept.set((record, Mutex::new(self.life())));
    }

    /// Whether [`save_life`](Self::save_life) has anything to write: a
    /// record is kept and the life's spending changed since its last write.
    pub fn life_unsaved(&self) -> bool {
        let Some((_, last)) = self.kept.get() else {
            return false;
        };
        // Read before the record's lock is taken, as `save_life` does.
        let now = self.life();
        *lock(last) != now
    }

    /// Writes the life's spending to its record when it changed since the
    /// last write (a file write: call it off the async executor). Nothing
    /// to do without a record.
    pub fn save_life(&self) -> crate::Result<()> {
        let Some((record, last)) = self.kept.get() else {
            return Ok(());
        };
        let now = self.life();
        let mut last = lock(last);
        if *last == now {
            return Ok(());
        }
        record.save(&now)?;
        *last = now;
        Ok(())
    }

    /// The limits the budgets were made from (the root teammate's).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The disk meter of the tree's directories.
    pub fn disk(&self) -> &Arc<DiskMeter> {
        &self.disk
    }

    /// Takes `bytes` of linear memory from the pool, or refuses (nothing
    /// taken) when the tree would hold more than `memory_total_bytes`. The
    /// error is the trap message, naming the limit.
    pub fn take_memory(&self, bytes: usize) -> Result<(), String> {
        let total = self.limits.memory_total_bytes;
        self.memory
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(bytes).filter(|after| *after <= total)
            })
            .map(|_| ())
            .map_err(|held| {
                let mib = |b: usize| b as f64 / f64::from(1 << 20);
                format!(
                    "memory limit: {:.1} MiB more would bring the memory of this teammate and \
                     its sub-agents to {:.1} MiB, more than {:.1} MiB ([teammate.limits] memory_total_mb)",
                    mib(bytes),
                    mib(held.saturating_add(bytes)),
                    mib(total)
                )
            })
    }

    /// Gives `bytes` back to the pool (an instance ended, or a growth it was
    /// allowed failed).
    pub fn give_memory(&self, bytes: usize) {
        let _ = self
            .memory
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                Some(held.saturating_sub(bytes))
            });
    }

    /// Bytes of linear memory the tree holds now.
    pub fn memory_held(&self) -> usize {
        self.memory.load(Ordering::SeqCst)
    }

    /// Counts one more sub-agent started by the tree, or refuses it (not
    /// counted) past `max_subagents_total`.
    pub fn start_subagent(&self) -> Result<(), String> {
        let max = self.limits.max_subagents_total;
        self.subagents
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| ())
            .map_err(|_| {
                format!(
                    "this teammate and its sub-agents already started {max} sub-agents \
                     (max_subagents_total): no more in its life; do this work yourself"
                )
            })
    }

    /// Sub-agents the tree started so far.
    pub fn subagents_started(&self) -> u32 {
        self.subagents.load(Ordering::SeqCst)
    }

    /// Counts one act on the team in `turn` (the instance's current turn)
    /// and in the tree's life totals ([`Limits::count_act`]).
    pub fn count_act(&self, act: TeamAct, turn: &mut TeamActs) -> Result<(), String> {
        let mut spent = lock(&self.spent);
        self.limits.count_act(act, turn, &mut spent.acts)
    }

    /// The tree's life totals of acts on the team.
    pub fn acts(&self) -> TeamActs {
        lock(&self.spent).acts
    }

    /// Counts `bytes` written into the team's store by `what`
    /// ([`Limits::count_team_bytes`]).
    pub fn count_team_bytes(&self, what: &str, bytes: u64) -> Result<(), String> {
        let mut spent = lock(&self.spent);
        self.limits
            .count_team_bytes(what, bytes, &mut spent.team_bytes)
    }

    /// Bytes the tree wrote into the team's store so far.
    pub fn team_bytes(&self) -> u64 {
        lock(&self.spent).team_bytes
    }

    /// Counts one `state.save`/`state.clear` in `turn` and in the life
    /// total ([`Limits::count_state_save`]).
    pub fn count_state_save(&self, turn: &AtomicU32) -> Result<(), String> {
        let mut spent = lock(&self.spent);
        let mut this_turn = turn.load(Ordering::SeqCst);
        self.limits
            .count_state_save(&mut this_turn, &mut spent.state_saves)?;
        turn.store(this_turn, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(limits: Limits) -> (tempfile::TempDir, Arc<TreeBudget>) {
        let dir = tempfile::tempdir().unwrap();
        let tools = Arc::new(ToolBox::open(dir.path(), Default::default()).unwrap());
        let b = TreeBudget::new(&limits, tools);
        (dir, b)
    }

    #[test]
    fn the_memory_pool_refuses_what_would_pass_the_total_and_takes_back_what_is_given() {
        let (_d, b) = budget(Limits {
            memory_total_bytes: 10 << 20,
            ..Limits::default()
        });
        b.take_memory(6 << 20).unwrap();
        let e = b.take_memory(5 << 20).unwrap_err();
        assert!(
            e.starts_with("memory limit: ") && e.contains("([teammate.limits] memory_total_mb)"),
            "{e}"
        );
        assert_eq!(b.memory_held(), 6 << 20, "a refusal takes nothing");
        b.give_memory(6 << 20);
        b.take_memory(10 << 20).unwrap();
    }

    #[test]
    fn sub_agents_are_counted_for_the_whole_tree() {
        let (_d, b) = budget(Limits {
            max_subagents_total: 2,
            ..Limits::default()
        });
        let shared = b.clone();
        b.start_subagent().unwrap();
        shared.start_subagent().unwrap();
        let e = b.start_subagent().unwrap_err();
        assert!(e.contains("(max_subagents_total)"), "{e}");
        assert_eq!(shared.subagents_started(), 2);
    }

    #[test]
    fn acts_of_every_instance_count_against_one_life_total() {
        let (_d, b) = budget(Limits {
            max_messages_total: 3,
            ..Limits::default()
        });
        let (mut parent_turn, mut child_turn) = (TeamActs::default(), TeamActs::default());
        b.count_act(TeamAct::Message, &mut parent_turn).unwrap();
        b.count_act(TeamAct::Message, &mut child_turn).unwrap();
        b.count_act(TeamAct::Message, &mut child_turn).unwrap();
        let e = b
            .count_act(TeamAct::Message, &mut TeamActs::default())
            .unwrap_err();
        assert!(e.contains("(max_messages_total)"), "{e}");
        assert_eq!(b.acts().messages, 3);
    }

    #[test]
    fn a_resumed_tree_goes_on_from_what_its_earlier_life_spent() {
        let limits = Limits {
            max_subagents_total: 2,
            max_messages_total: 2,
            ..Limits::default()
        };
        let home = tempfile::tempdir().unwrap();
        let record = || SpentRecord::of(&crate::home::Home::new(home.path()), "t", "w").unwrap();
        let (_d, first) = budget(limits.clone());
        first.keep_in(record());
        first.start_subagent().unwrap();
        first
            .count_act(TeamAct::Message, &mut TeamActs::default())
            .unwrap();
        first.save_life().unwrap();
        assert_eq!(record().load().unwrap(), Some(first.life()));

        // The host dies; the next life starts from the record.
        let (_d2, second) = budget(limits);
        second.restore(record().load().unwrap().unwrap());
        second.keep_in(record());
        second.start_subagent().unwrap();
        let e = second.start_subagent().unwrap_err();
        assert!(e.contains("(max_subagents_total)"), "{e}");
        second
            .count_act(TeamAct::Message, &mut TeamActs::default())
            .unwrap();
        assert!(second
            .count_act(TeamAct::Message, &mut TeamActs::default())
            .is_err());
        second.save_life().unwrap();
        assert_eq!(record().load().unwrap().unwrap().subagents, 2);
    }

    #[test]
    fn spending_is_unsaved_only_with_a_record_and_a_change_since_its_last_write() {
        let home = tempfile::tempdir().unwrap();
        let (_d, b) = budget(Limits::default());
        b.start_subagent().unwrap();
        assert!(!b.life_unsaved(), "no record: nothing to write");
        b.keep_in(SpentRecord::of(&crate::home::Home::new(home.path()), "t", "w").unwrap());
        assert!(!b.life_unsaved(), "what was spent before counts as kept");
        b.start_subagent().unwrap();
        assert!(b.life_unsaved());
        b.save_life().unwrap();
        assert!(!b.life_unsaved(), "written");
    }

    #[test]
    fn state_saves_count_per_turn_and_in_all() {
        let (_d, b) = budget(Limits {
            max_state_saves_per_turn: 1,
            ..Limits::default()
        });
        let turn = AtomicU32::new(0);
        b.count_state_save(&turn).unwrap();
        assert!(b.count_state_save(&turn).is_err());
        turn.store(0, Ordering::SeqCst);
        b.count_state_save(&turn).unwrap();
    }
}
