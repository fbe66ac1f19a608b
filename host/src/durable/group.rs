//! Group commit of file syncs: many writers, one flush.
//!
//! A staged file ([`Staged`]) must reach the disk before it is put in
//! place. Synced one by one, each costs a device flush (about 0.1–0.3 ms
//! here), and a thousand writers at once queue on them (about 1,100 a
//! second on this project's machine class). [`commit_grouped`] hands the
//! file to one process-wide syncer thread instead: while it flushes, the
//! files handed in meanwhile wait, and the next round flushes them all at
//! once, with one `syncfs(2)` per filesystem among them, then puts each in
//! place ([`Staged::commit`]). A file alone in its round gets its own
//! `fdatasync`, so a lone writer never flushes what others left dirty.
//!
//! The guarantee is the one [`Staged::sync`] then [`Staged::commit`] give:
//! when the call returns `Ok`, the file's data was on disk before it was
//! put in place (`syncfs` flushes data and metadata of
//! every file of the filesystem). When a `syncfs` fails, each file of the
//! round is synced on its own, so each writer gets its own file's error and
//! none is told its data is safe when it is not. The cost of `syncfs` is
//! what else is dirty on that filesystem at the time: writes of other
//! programs ride along. With ext4's ordered journal a plain `fsync` has the
//! same exposure (its commit writes out the data of every file in the
//! transaction), so the worst case is no worse than before.
//!
//! Off Linux every file is synced on its own, in the syncer's rounds.

use std::sync::mpsc;
use std::sync::OnceLock;

use super::Staged;
use crate::error::{Error, Result};

/// One file waiting for its flush, and where its outcome goes.
struct Job {
    staged: Staged,
    done: tokio::sync::oneshot::Sender<Result<()>>,
}

/// Flushes `staged` to disk together with whatever other files are
/// waiting (see the module docs), then puts it in place. An error names
/// the file and the step; the staged version is then dropped and the
/// target is as it was.
pub async fn commit_grouped(staged: Staged) -> Result<()> {
    let (done, outcome) = tokio::sync::oneshot::channel();
    syncer()?.send(Job { staged, done }).map_err(|_| {
        Error::HostTask("the group syncer thread is gone; the file was not synced".into())
    })?;
    outcome
        .await
        .map_err(|_| Error::HostTask("the group syncer stopped before it synced the file".into()))?
}

/// The process-wide syncer's queue, started on first use (an error when
/// its thread could not start: every grouped commit then fails, saying so).
fn syncer() -> Result<&'static mpsc::Sender<Job>> {
    static QUEUE: OnceLock<std::result::Result<mpsc::Sender<Job>, String>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel();
            std::thread::Builder::new()
                .name("teamhost-group-sync".into())
                .spawn(move || run(rx))
                .map(|_| tx)
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| Error::HostTask(format!("cannot start the group syncer thread: {e}")))
}

/// The syncer: a round is every job waiting when the last one ended.
fn run(rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut round = vec![first];
        round.extend(rx.try_iter());
        let results = flush(&round.iter().map(|j| &j.staged).collect::<Vec<_>>());
        for (job, flushed) in round.into_iter().zip(results) {
            // A writer that gave up waiting (its task was dropped) still
            // has its file put in place: it was flushed, and a caller that
            // stops waiting cannot tell whether the write happened anyway.
            let result = flushed.and_then(|()| job.staged.commit());
            let _ = job.done.send(result);
        }
    }
}

/// Flushes every file of a round; one result per file, in order.
fn flush(files: &[&Staged]) -> Vec<Result<()>> {
    if files.len() == 1 {
        return vec![files[0].sync()];
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        // One `syncfs` per filesystem; a file whose filesystem cannot be
        // told, or whose `syncfs` failed, is synced on its own.
        let devs: Vec<Option<u64>> = files
            .iter()
            .map(|f| f.file().metadata().ok().map(|m| m.dev()))
            .collect();
        let mut synced: Vec<(u64, bool)> = Vec::new();
        files
            .iter()
            .zip(&devs)
            .map(|(f, dev)| {
                let Some(dev) = *dev else {
                    return f.sync();
                };
                let ok = match synced.iter().find(|(d, _)| *d == dev) {
                    Some((_, ok)) => *ok,
                    None => {
                        let ok = syncfs(f.file());
                        synced.push((dev, ok));
                        ok
                    }
                };
                if ok {
                    Ok(())
                } else {
                    f.sync()
                }
            })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        files.iter().map(|f| f.sync()).collect()
    }
}

/// `syncfs(2)` on the filesystem holding `file`: whether it succeeded.
#[cfg(target_os = "linux")]
fn syncfs(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `syncfs` reads only the descriptor, which `file` keeps open
    // for the duration of the call.
    unsafe { libc::syncfs(file.as_raw_fd()) == 0 }
}

#[cfg(test)]
mod tests {
    use super::super::stage_bytes;
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn many_writers_at_once_each_find_their_own_file_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let rt = runtime();
        rt.block_on(async {
            let tasks: Vec<_> = (0..64)
                .map(|i| {
                    let path = dir.path().join(format!("f{i}.json"));
                    tokio::spawn(async move {
                        let staged = stage_bytes(&path, format!("[{i}]").as_bytes())?;
                        commit_grouped(staged).await
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap().unwrap();
            }
        });
        for i in 0..64 {
            let body = std::fs::read_to_string(dir.path().join(format!("f{i}.json"))).unwrap();
            assert_eq!(body, format!("[{i}]"));
        }
        let left = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(left, 64, "no temporary file is left");
    }

    #[test]
    fn a_writer_that_stops_waiting_still_finds_its_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.json");
        std::fs::write(&path, b"[0]").unwrap();
        let rt = runtime();
        rt.block_on(async {
            let staged = stage_bytes(&path, b"[1]").unwrap();
            // Polled once (the job is queued), then dropped, most likely
            // before the syncer answers.
            let _ = tokio::time::timeout(std::time::Duration::ZERO, commit_grouped(staged)).await;
            // The queue is first in, first out: once a later file is
            // answered, the syncer has dealt with the abandoned one.
            let other = stage_bytes(&dir.path().join("other.json"), b"[2]").unwrap();
            commit_grouped(other).await.unwrap();
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"[1]");
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, vec!["gone.json", "other.json"], "no temporary file");
    }

    #[test]
    fn files_kept_in_spares_take_turns_and_are_always_whole() {
        use super::super::{spare_path, stage_in_spare};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conv.json");
        let rt = runtime();
        // Many writers of one file at once (a teammate's old and new life):
        // each version lands whole, one after another.
        rt.block_on(async {
            let tasks: Vec<_> = (0..32)
                .map(|i| {
                    let path = path.clone();
                    tokio::spawn(async move {
                        let body = format!("[{}]", "7,".repeat(i * 50) + "7");
                        let staged = tokio::task::spawn_blocking(move || {
                            stage_in_spare(&path, body.as_bytes())
                        })
                        .await
                        .unwrap()?;
                        commit_grouped(staged).await
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap().unwrap();
            }
        });
        for p in [&path, &spare_path(&path)] {
            let v: Vec<u32> = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            assert!(v.iter().all(|n| *n == 7), "{} is whole", p.display());
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
