//! [`DiskMeter`]: the disk budget of a teammate's tree (`disk_bytes`),
//! counted while the guest writes, not only after the turn.
//!
//! The meter knows what the directories held at the last measurement (a
//! real walk, [`ToolBox::disk_usage`]) and how many bytes writes have grown
//! them since. A write that fits under the budget with that sum is counted
//! and goes on at once (no walk); one that does not makes the meter measure
//! again (deleted files and overwrites show there), and is refused when it
//! still does not fit. So a walk happens at most once per `disk_bytes` of
//! growth, and every time a writer presses on a full budget (as a Write or
//! Edit call walks once per call).
//!
//! The directories are the teammate's own and those of its sub-agents'
//! worktrees ([`DiskMeter::add_dir`]): one budget for the whole tree. A
//! directory that no longer exists counts as empty.
//!
//! What a guest has in flight when a measurement runs (one stream's pending
//! write, a Bash call's current output) may be seen by neither the walk nor
//! the count: the directories can pass the budget by that much, never more.
//!
//! **After a turn** the tree is measured only when the count cannot vouch
//! for it ([`DiskMeter::needs_measure`]): it was never measured, something
//! the count does not see changed it since ([`DiskMeter::note_unseen`]: a
//! Write, Edit or Bash call, a directory added to the tree, a link or a
//! directory the guest made), or the entries the guest's creating opens
//! made ([`DiskMeter::note_entry`]) could put it past `disk_walk_entries`.
//! Bytes need no walk: every byte a guest writes was counted before it was
//! written. A turn that only writes files the count saw (the usual turn)
//! costs no walk, however big the directory. What the count cannot see is
//! another writer in the same directory: teammates that share one directory
//! each count their own writes against their own budget, so together they
//! can put it past one budget, up to once per teammate (as two turns running
//! at once could already, each measured before the other wrote).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::tools::{DiskBudget, DiskUsage, ToolBox};

/// The disk budget of one teammate's tree, shared by every instance of it.
pub struct DiskMeter {
    budget: DiskBudget,
    dirs: Mutex<Vec<Arc<ToolBox>>>,
    count: Mutex<Count>,
    /// One measurement at a time (a second waiter finds it fresh).
    walking: tokio::sync::Mutex<()>,
    /// The lead was told of a refused write, and the tree has had no room
    /// since.
    told: Arc<AtomicBool>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Count {
    /// Bytes at the last measurement.
    measured: u64,
    /// Growth counted since.
    since: u64,
    /// Measurements made (for tests and benches).
    walks: u64,
    /// Entries at the last measurement; `None` before the first.
    entries: Option<usize>,
    /// Entries made over the meter's life ([`DiskMeter::note_entry`]), and
    /// how many of them the last measurement had seen.
    made: u64,
    made_seen: u64,
    /// Changes the count does not see ([`DiskMeter::note_unseen`]) over the
    /// meter's life, and how many of them the last measurement had seen.
    unseen: u64,
    unseen_seen: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DiskMeter {
    /// A meter for `budget` over `root` (the teammate's directory). Nothing
    /// is measured yet: the first write past an empty count measures.
    pub fn new(budget: DiskBudget, root: Arc<ToolBox>) -> Arc<DiskMeter> {
        Arc::new(DiskMeter {
            budget,
            dirs: Mutex::new(vec![root]),
            count: Mutex::new(Count::default()),
            walking: tokio::sync::Mutex::new(()),
            told: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The budget.
    pub fn budget(&self) -> DiskBudget {
        self.budget
    }

    /// Counts another directory of the tree (a sub-agent's worktree); one
    /// already counted is not added twice.
    pub fn add_dir(&self, tools: Arc<ToolBox>) {
        let mut dirs = lock(&self.dirs);
        if !dirs.iter().any(|d| d.root() == tools.root()) {
            dirs.push(tools);
        }
        drop(dirs);
        self.note_unseen();
    }

    /// Stops counting `root` (a worktree that was removed).
    pub fn remove_dir(&self, root: &Path) {
        lock(&self.dirs).retain(|d| d.root() != root);
    }

    /// The directories counted now.
    pub fn dirs(&self) -> Vec<PathBuf> {
        lock(&self.dirs)
            .iter()
            .map(|d| d.root().to_path_buf())
            .collect()
    }

    /// Bytes the tree may still grow by, as far as the meter knows.
    pub fn room(&self) -> u64 {
        let c = *lock(&self.count);
        self.budget
            .bytes
            .saturating_sub(c.measured.saturating_add(c.since))
    }

    /// Set once the lead is told of a refused write; cleared when a
    /// measurement finds room again (so the lead hears of the next one).
    pub fn told(&self) -> Arc<AtomicBool> {
        self.told.clone()
    }

    /// Measurements made so far.
    pub fn walks(&self) -> u64 {
        lock(&self.count).walks
    }

    /// Counts an entry the guest may have made without writing a byte (an
    /// open that creates a file): enough of them since the last measurement
    /// make the next [`needs_measure`](Self::needs_measure) true.
    pub fn note_entry(&self) {
        lock(&self.count).made += 1;
    }

    /// Says the tree changed in a way the count does not see (a host tool
    /// wrote to it, a directory joined it, the guest made a link or a
    /// directory): the next [`needs_measure`](Self::needs_measure) is true.
    pub fn note_unseen(&self) {
        lock(&self.count).unseen += 1;
    }

    /// Whether only a walk can tell that the tree is within its budget:
    /// never measured, changed unseen since the last measurement, or with
    /// more entries, counted, than `disk_walk_entries`.
    pub fn needs_measure(&self) -> bool {
        let c = lock(&self.count);
        let Some(entries) = c.entries else {
            return true;
        };
        let made = usize::try_from(c.made - c.made_seen).unwrap_or(usize::MAX);
        c.unseen != c.unseen_seen || entries.saturating_add(made) > self.budget.entries
    }

    /// Counts `growth` bytes when they fit under the budget with what the
    /// meter knows; `false` (nothing counted) when they do not.
    pub fn try_grow(&self, growth: u64) -> bool {
        let mut c = lock(&self.count);
        if c.measured.saturating_add(c.since).saturating_add(growth) > self.budget.bytes {
            return false;
        }
        c.since += growth;
        true
    }

    /// Counts `growth` bytes, measuring again first when they do not fit
    /// with what the meter knows. `Err` (nothing counted) names the limit:
    /// the write must not happen.
    pub async fn grow(&self, growth: u64) -> Result<(), String> {
        if self.try_grow(growth) {
            return Ok(());
        }
        let usage = self.measure().await;
        if let Some(breach) = self.budget.breach(&usage) {
            return Err(breach);
        }
        if self.try_grow(growth) {
            self.told.store(false, Ordering::SeqCst);
            return Ok(());
        }
        Err(self.refusal(growth))
    }

    /// Why a write of `growth` bytes is refused.
    pub fn refusal(&self, growth: u64) -> String {
        let c = *lock(&self.count);
        format!(
            "disk limit: {growth} more bytes would put the teammate's directories over {} bytes \
             ([teammate.limits] disk_mb); they hold {}",
            self.budget.bytes,
            c.measured.saturating_add(c.since)
        )
    }

    /// Measures every directory of the tree now (on a blocking thread) and
    /// starts counting from there.
    pub async fn measure(&self) -> DiskUsage {
        self.measure_then(|| ()).await.0
    }

    /// [`measure`](Self::measure), then `also` on the same blocking thread:
    /// one hand-off where a turn's end needs two (the walk and the life's
    /// spending kept). `None` for `also`'s result when it panicked (the
    /// walk's result stands); a walk that panicked reads as incomplete, to
    /// be measured again.
    pub async fn measure_then<T: Send + 'static>(
        &self,
        also: impl FnOnce() -> T + Send + 'static,
    ) -> (DiskUsage, Option<T>) {
        let _one = self.walking.lock().await;
        let seen = self.seen_now();
        let dirs = lock(&self.dirs).clone();
        let entries = self.budget.entries;
        let done = tokio::task::spawn_blocking(move || {
            use std::panic::{catch_unwind, AssertUnwindSafe};
            let usage = catch_unwind(AssertUnwindSafe(|| walk(&dirs, entries))).ok();
            (usage, catch_unwind(AssertUnwindSafe(also)).ok())
        })
        .await;
        let (usage, also) = done.unwrap_or((None, None));
        let usage = usage.unwrap_or(DiskUsage {
            bytes: 0,
            entries: 0,
            incomplete: true,
        });
        self.record(usage, seen);
        (usage, also)
    }

    /// [`measure`](Self::measure) on the calling thread (a Bash call's
    /// watch, which runs on a blocking thread already).
    pub fn measure_blocking(&self) -> DiskUsage {
        let seen = self.seen_now();
        let dirs = lock(&self.dirs).clone();
        let usage = walk(&dirs, self.budget.entries);
        self.record(usage, seen);
        usage
    }

    /// The entries made and unseen changes so far: what a walk starting
    /// now will have seen (a change made while it runs may be missed, so
    /// it stays counted).
    fn seen_now(&self) -> (u64, u64) {
        let c = lock(&self.count);
        (c.made, c.unseen)
    }

    fn record(&self, usage: DiskUsage, (made, unseen): (u64, u64)) {
        let mut c = lock(&self.count);
        c.measured = usage.bytes;
        c.since = 0;
        c.walks += 1;
        // An incomplete walk saw more entries than the budget: the next
        // question must walk again.
        c.entries = Some(if usage.incomplete {
            usize::MAX
        } else {
            usage.entries
        });
        c.made_seen = c.made_seen.max(made);
        c.unseen_seen = c.unseen_seen.max(unseen);
    }
}

/// Walks `dirs`, sharing one entry budget; a directory that is gone counts
/// as empty.
fn walk(dirs: &[Arc<ToolBox>], max_entries: usize) -> DiskUsage {
    let mut total = DiskUsage {
        bytes: 0,
        entries: 0,
        incomplete: false,
    };
    for (i, d) in dirs.iter().enumerate() {
        // The teammate's own directory is always walked; a worktree that
        // was removed is skipped.
        if i > 0 && !d.root().is_dir() {
            continue;
        }
        let u = d.disk_usage(max_entries.saturating_sub(total.entries));
        total.bytes = total.bytes.saturating_add(u.bytes);
        total.entries += u.entries;
        if u.incomplete {
            total.incomplete = true;
            break;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(dir: &Path, bytes: u64) -> Arc<DiskMeter> {
        let tools = ToolBox::open(dir, Default::default()).unwrap();
        DiskMeter::new(
            DiskBudget {
                bytes,
                entries: 1_000,
            },
            Arc::new(tools),
        )
    }

    #[tokio::test]
    async fn growth_is_counted_without_walks_until_the_budget_and_measured_there() {
        let dir = tempfile::tempdir().unwrap();
        let m = meter(dir.path(), 1_000);
        m.grow(600).await.unwrap();
        m.grow(400).await.unwrap();
        assert_eq!(m.walks(), 0, "growth under the budget costs no walk");
        // Nothing is on disk: the count was pessimistic, a walk shows room.
        m.grow(500).await.unwrap();
        assert_eq!(m.walks(), 1);
        std::fs::write(dir.path().join("f"), vec![0u8; 900]).unwrap();
        // 500 counted + 600 do not fit: measured, 900 on disk, still no room.
        let e = m.grow(600).await.unwrap_err();
        assert_eq!(m.walks(), 2);
        assert!(
            e.starts_with("disk limit: ") && e.contains("[teammate.limits] disk_mb"),
            "{e}"
        );
        assert_eq!(m.room(), 100);
        m.grow(100).await.unwrap();
    }

    #[tokio::test]
    async fn only_what_the_count_cannot_vouch_for_needs_a_walk() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ToolBox::open(dir.path(), Default::default()).unwrap();
        let m = DiskMeter::new(
            DiskBudget {
                bytes: 1_000,
                entries: 10,
            },
            Arc::new(tools),
        );
        assert!(m.needs_measure(), "never measured");
        std::fs::write(dir.path().join("a"), "x").unwrap();
        m.measure().await;
        assert!(!m.needs_measure());
        m.grow(900).await.unwrap();
        assert!(!m.needs_measure(), "counted bytes need no walk");
        // 1 entry measured + 9 made fit in 10; one more does not.
        for _ in 0..9 {
            m.note_entry();
        }
        assert!(!m.needs_measure());
        m.note_entry();
        assert!(m.needs_measure(), "11 entries, counted, pass 10");
        m.measure().await;
        assert!(!m.needs_measure(), "the walk found 1");
        m.note_unseen();
        assert!(m.needs_measure(), "a change the count did not see");
        m.measure().await;
        assert!(!m.needs_measure());
        let other = tempfile::tempdir().unwrap();
        m.add_dir(Arc::new(
            ToolBox::open(other.path(), Default::default()).unwrap(),
        ));
        assert!(m.needs_measure(), "a directory joined the tree");
        for i in 0..11 {
            std::fs::write(other.path().join(format!("f{i}")), "").unwrap();
        }
        assert!(m.budget().breach(&m.measure().await).is_some());
        assert!(m.needs_measure(), "an incomplete walk is asked again");
    }

    #[tokio::test]
    async fn a_measurement_with_more_work_records_the_walk_and_runs_the_work_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![0u8; 300]).unwrap();
        let m = meter(dir.path(), 1_000);
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = ran.clone();
        let (usage, also) = m
            .measure_then(move || counted.fetch_add(1, Ordering::SeqCst) + 1)
            .await;
        assert_eq!((usage.bytes, usage.incomplete), (300, false));
        assert_eq!(also, Some(1));
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(m.walks(), 1);
        assert!(!m.needs_measure(), "the walk counts as a measurement");
        assert_eq!(m.room(), 700);
        // A panic in the work loses its result, not the walk.
        let (usage, also) = m
            .measure_then(|| -> u32 { panic!("the work failed") })
            .await;
        assert_eq!((usage.bytes, also), (300, None));
        assert_eq!(m.walks(), 2);
    }

    #[tokio::test]
    async fn every_directory_of_the_tree_counts_and_a_removed_one_counts_as_empty() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("f"), vec![0u8; 300]).unwrap();
        std::fs::write(b.path().join("g"), vec![0u8; 400]).unwrap();
        let m = meter(a.path(), 1_000);
        m.add_dir(Arc::new(
            ToolBox::open(b.path(), Default::default()).unwrap(),
        ));
        assert_eq!(m.measure().await.bytes, 700);
        let gone = b.path().to_path_buf();
        drop(b);
        assert_eq!(m.measure().await.bytes, 300);
        m.remove_dir(&gone);
        assert_eq!(m.dirs().len(), 1);
    }
}
