//! The lock's guarantees, on real files: mutual exclusion between threads
//! and between open file descriptions (as between processes), arrival
//! order, waking on release, leftovers of crashed holders, foreign lock
//! directories, and timeouts that name the real holder.

use super::*;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Safety bound for waits that must end long before it.
const BOUND: Duration = Duration::from_secs(20);

fn quick() -> LockOptions {
    LockOptions {
        timeout: Duration::from_millis(300),
        stale: Duration::from_secs(10),
    }
}

fn patient() -> LockOptions {
    LockOptions {
        timeout: BOUND,
        stale: Duration::from_secs(10),
    }
}

/// Waits (yielding, no sleep) until `n` threads queue at `path`.
fn until_waiting(path: &Path, n: usize) {
    let start = Instant::now();
    while gate::waiting(path) < n {
        assert!(start.elapsed() < BOUND, "threads never queued");
        std::thread::yield_now();
    }
}

#[test]
fn lock_dir_exists_only_while_held() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    let target = tmp.path().join("sub/inbox.json");
    let dir = lock_dir_for(&target);
    with_lock(&target, &quick(), "a test", || {
        assert!(dir.is_dir(), "mkdir lock must be held inside the closure");
        Ok(())
    })
    .unwrap();
    assert!(!dir.exists());
    assert!(flock_file_for(&target).is_file());
    assert!(!gate::has_gate(&target), "an unused gate is forgotten");
}

#[test]
fn a_lock_never_makes_the_directory_it_is_in() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("gone/inbox.json");
    let err = with_lock(&target, &quick(), "a late write", || Ok(())).unwrap_err();
    assert!(err.to_string().contains("gone"), "{err}");
    assert!(!tmp.path().join("gone").exists());
}

#[test]
fn threads_never_overlap_inside_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let target = Arc::new(tmp.path().join("f.json"));
    let inside = Arc::new(AtomicUsize::new(0));
    let total = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (target, inside, total) = (target.clone(), inside.clone(), total.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    with_lock(&target, &LockOptions::default(), "a test", || {
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        total.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(total.load(Ordering::SeqCst), 200);
    assert!(!gate::has_gate(&target));
}

#[test]
fn waiters_in_this_process_are_served_in_arrival_order() {
    let tmp = tempfile::tempdir().unwrap();
    let target = Arc::new(tmp.path().join("order.json"));
    let order = Arc::new(Mutex::new(Vec::new()));
    let (release, hold) = mpsc::channel::<()>();
    let holder = {
        let target = target.clone();
        let (held_tx, held) = mpsc::channel();
        let h = std::thread::spawn(move || {
            with_lock(&target, &patient(), "holding for the test", || {
                held_tx.send(()).unwrap();
                hold.recv().unwrap();
                Ok(())
            })
            .unwrap()
        });
        held.recv_timeout(BOUND).unwrap();
        h
    };
    let mut waiters = Vec::new();
    for i in 0..5 {
        let (t, order) = (target.clone(), order.clone());
        waiters.push(std::thread::spawn(move || {
            with_lock(&t, &patient(), "a waiter", || {
                order.lock().unwrap().push(i);
                Ok(())
            })
            .unwrap()
        }));
        until_waiting(&target, i + 1);
    }
    release.send(()).unwrap();
    holder.join().unwrap();
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn a_waiter_in_this_process_times_out_naming_what_holds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let target = Arc::new(tmp.path().join("config.json"));
    let (release, hold) = mpsc::channel::<()>();
    let (held_tx, held) = mpsc::channel();
    let holder = {
        let target = target.clone();
        std::thread::spawn(move || {
            with_lock(&target, &patient(), "a slow config update", || {
                held_tx.send(()).unwrap();
                hold.recv().unwrap();
                Ok(())
            })
            .unwrap()
        })
    };
    held.recv_timeout(BOUND).unwrap();
    let err = with_lock(&target, &quick(), "a waiter", || Ok(())).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::LockTimeout { .. }), "{msg}");
    assert!(
        msg.contains("held by this process") && msg.contains("a slow config update"),
        "{msg}"
    );
    assert!(!msg.contains("another teamhost process"), "{msg}");
    release.send(()).unwrap();
    holder.join().unwrap();
    // The timed-out waiter left the queue: the lock is free again.
    with_lock(&target, &quick(), "after", || Ok(())).unwrap();
}

#[test]
fn a_flock_held_elsewhere_is_waited_for_and_taken_when_released() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("inbox.json");
    // Another open file description stands for another process.
    let other = open_flock_file(&flock_file_for(&target)).unwrap();
    assert!(try_flock(&other).unwrap());
    let (done_tx, done) = mpsc::channel();
    let t2 = target.clone();
    let waiter = std::thread::spawn(move || {
        let r = with_lock(&t2, &patient(), "a waiter", || Ok(()));
        done_tx.send(r.is_ok()).unwrap();
    });
    // Still waiting while the other side holds it.
    assert!(done.recv_timeout(Duration::from_millis(100)).is_err());
    drop(other); // the other "process" releases
    assert!(done.recv_timeout(BOUND).unwrap(), "taken after the release");
    waiter.join().unwrap();
}

#[test]
fn a_flock_held_elsewhere_times_out_naming_the_recorded_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("config.json");
    // A holder in another process recorded itself when it took the lock.
    with_lock(&target, &quick(), "a member's registration", || Ok(())).unwrap();
    let other = open_flock_file(&flock_file_for(&target)).unwrap();
    assert!(try_flock(&other).unwrap());
    let msg = with_lock(&target, &quick(), "a waiter", || Ok(()))
        .unwrap_err()
        .to_string();
    let pid = std::process::id().to_string();
    assert!(
        msg.contains(&format!("teamhost process {pid}")) && msg.contains("registration"),
        "{msg}"
    );
    drop(other);
}

#[test]
fn a_fresh_foreign_lock_directory_is_waited_for_then_times_out_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("config.json");
    std::fs::create_dir(lock_dir_for(&target)).unwrap();
    let err = with_lock(&target, &quick(), "a test", || Ok(())).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::LockTimeout { .. }), "{msg}");
    assert!(
        msg.contains("config.json.lock") && msg.contains("another program"),
        "{msg}"
    );
    // The foreign lock is left alone.
    assert!(lock_dir_for(&target).is_dir());
}

#[test]
fn a_waiter_wakes_when_a_foreign_lock_directory_is_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("tasks.lock");
    let dir = lock_dir_for(&target);
    std::fs::create_dir(&dir).unwrap();
    let (done_tx, done) = mpsc::channel();
    let t2 = target.clone();
    let started = Instant::now();
    let waiter = std::thread::spawn(move || {
        let r = with_lock(&t2, &patient(), "a waiter", || Ok(()));
        done_tx.send(r.is_ok()).unwrap();
    });
    assert!(done.recv_timeout(Duration::from_millis(100)).is_err());
    std::fs::remove_dir(&dir).unwrap(); // the foreign holder lets go
    assert!(done.recv_timeout(BOUND).unwrap());
    waiter.join().unwrap();
    assert!(
        started.elapsed() < patient().stale,
        "woken by the removal, not by the lock turning stale"
    );
}

#[test]
fn a_stale_foreign_lock_directory_is_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("config.json");
    let dir = lock_dir_for(&target);
    std::fs::create_dir(&dir).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    File::open(&dir)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(old))
        .unwrap();
    let ran = with_lock(&target, &quick(), "a test", || Ok(true)).unwrap();
    assert!(ran);
}

#[test]
fn a_lock_directory_left_by_a_dead_teamhost_holder_is_taken_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("inbox.json");
    let dir = lock_dir_for(&target);
    // Simulate a holder that died after mkdir + record, before rmdir.
    std::fs::create_dir(&dir).unwrap();
    let f = open_flock_file(&flock_file_for(&target)).unwrap();
    record_owner(&dir, &f, "a test").unwrap();
    drop(f);
    let t = Instant::now();
    with_lock(&target, &quick(), "a test", || Ok(())).unwrap();
    assert!(t.elapsed() < quick().timeout, "must not wait for staleness");
}

#[test]
fn a_shorter_record_after_a_longer_one_names_only_its_own_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("inbox.json");
    let dir = lock_dir_for(&target);
    std::fs::create_dir(&dir).unwrap();
    let flock_path = flock_file_for(&target);
    let f = open_flock_file(&flock_path).unwrap();
    let long = format!("a {} write", "very ".repeat(60));
    record_owner(&dir, &f, &long).unwrap();
    assert!(recorded_holder(&flock_path).contains("very very"));
    // Padded, not cut: what the long record left beyond is never read.
    record_owner(&dir, &f, "a short write").unwrap();
    let holder = recorded_holder(&flock_path);
    let pid = std::process::id();
    assert!(
        holder.starts_with(&format!("teamhost process {pid} (a short write)")),
        "{holder}"
    );
    // And its identity line still marks the directory as this holder's.
    assert_eq!(
        foreign_lock_age(&dir, &f).unwrap(),
        None,
        "taken as a dead holder's"
    );
}

#[test]
fn the_flock_is_released_when_the_lock_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("x.json");
    with_lock(&target, &quick(), "a test", || Ok(())).unwrap();
    let other = open_flock_file(&flock_file_for(&target)).unwrap();
    assert!(try_flock(&other).unwrap(), "nobody holds it afterwards");
    // SAFETY: unlocking our own descriptor.
    unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_UN) };
}
