//! Group commit under real threads: every change lands exactly once, the
//! threads that queue behind a leader share its one write, a failed change
//! hurts only its own caller (even one that failed half-done), and a failed
//! write reaches every member.

use super::*;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The stored document and how often it was written.
#[derive(Default)]
struct Disk {
    doc: Mutex<Vec<u32>>,
    writes: Mutex<usize>,
    fail_writes: Mutex<bool>,
}

impl Disk {
    /// A lead that loads, lets the batch apply, and stores.
    fn lead(&self, batch: &mut dyn FnMut(Vec<u32>) -> Result<(Vec<u32>, bool)>) -> Result<()> {
        let loaded = self.doc.lock().unwrap().clone();
        let (doc, changed) = batch(loaded)?;
        if changed {
            if *self.fail_writes.lock().unwrap() {
                return Err(Error::io(
                    "write",
                    "/disk",
                    std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full"),
                ));
            }
            *self.doc.lock().unwrap() = doc;
            *self.writes.lock().unwrap() += 1;
        }
        Ok(())
    }
}

const PATH: &str = "/disk/doc.json";
const BOUND: Duration = Duration::from_secs(20);

fn until_waiting(c: &Combiners<Vec<u32>>, n: usize) {
    let start = Instant::now();
    while c.waiting(Path::new(PATH)) < n {
        assert!(start.elapsed() < BOUND, "threads never queued");
        std::thread::yield_now();
    }
}

#[test]
fn every_change_lands_once_whatever_the_interleaving() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let (c, disk) = (c.clone(), disk.clone());
            std::thread::spawn(move || {
                for i in 0..50u32 {
                    let mut push = |d: &mut Vec<u32>| {
                        d.push(t * 1000 + i);
                        Ok(())
                    };
                    c.update(Path::new(PATH), Changes::Checked, &mut push, |b| {
                        disk.lead(b)
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut doc = disk.doc.lock().unwrap().clone();
    assert_eq!(doc.len(), 400);
    doc.sort();
    doc.dedup();
    assert_eq!(doc.len(), 400, "none twice");
    assert!(*disk.writes.lock().unwrap() <= 400);
    assert_eq!(c.waiting(Path::new(PATH)), 0);
    assert!(lock(&c.by_path).is_empty(), "an idle combiner is forgotten");
}

/// Starts a leader that holds its batch open until `release` is sent.
fn blocked_leader(
    c: &Arc<Combiners<Vec<u32>>>,
    disk: &Arc<Disk>,
) -> (mpsc::Sender<()>, std::thread::JoinHandle<Result<()>>) {
    let (release, hold) = mpsc::channel::<()>();
    let (loading_tx, loading) = mpsc::channel();
    let (c, disk) = (c.clone(), disk.clone());
    let leader = std::thread::spawn(move || {
        let mut push = |d: &mut Vec<u32>| {
            d.push(0);
            Ok(())
        };
        c.update(Path::new(PATH), Changes::Checked, &mut push, |b| {
            loading_tx.send(()).unwrap();
            hold.recv().unwrap(); // the load is slow
            disk.lead(b)
        })
    });
    loading.recv_timeout(BOUND).unwrap();
    (release, leader)
}

#[test]
fn threads_queued_behind_a_leader_share_its_one_write() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    let (release, leader) = blocked_leader(&c, &disk);
    let joiners: Vec<_> = (1..=5u32)
        .map(|n| {
            let (c2, d2) = (c.clone(), disk.clone());
            let h = std::thread::spawn(move || {
                let mut push = |d: &mut Vec<u32>| {
                    d.push(n);
                    Ok(())
                };
                c2.update(Path::new(PATH), Changes::Checked, &mut push, |b| d2.lead(b))
            });
            until_waiting(&c, n as usize);
            h
        })
        .collect();
    release.send(()).unwrap();
    leader.join().unwrap().unwrap();
    for j in joiners {
        j.join().unwrap().unwrap();
    }
    let mut doc = disk.doc.lock().unwrap().clone();
    doc.sort();
    assert_eq!(doc, [0, 1, 2, 3, 4, 5]);
    assert_eq!(*disk.writes.lock().unwrap(), 1, "six changes, one write");
}

#[test]
fn a_failed_change_hurts_only_its_caller() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    let (release, leader) = blocked_leader(&c, &disk);
    let (c2, d2) = (c.clone(), disk.clone());
    let failing = std::thread::spawn(move || {
        let mut refuse = |_: &mut Vec<u32>| Err(Error::StoreRule("no such member".into()));
        c2.update(Path::new(PATH), Changes::Checked, &mut refuse, |b| {
            d2.lead(b)
        })
    });
    until_waiting(&c, 1);
    let (c3, d3) = (c.clone(), disk.clone());
    let fine = std::thread::spawn(move || {
        let mut push = |d: &mut Vec<u32>| {
            d.push(7);
            Ok(())
        };
        c3.update(Path::new(PATH), Changes::Checked, &mut push, |b| d3.lead(b))
    });
    until_waiting(&c, 2);
    release.send(()).unwrap();
    leader.join().unwrap().unwrap();
    let err = failing.join().unwrap().unwrap_err().to_string();
    assert!(err.contains("no such member"), "{err}");
    fine.join().unwrap().unwrap();
    assert_eq!(*disk.doc.lock().unwrap(), [0, 7]);
}

#[test]
fn a_failed_write_reaches_every_member_of_the_batch() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    *disk.fail_writes.lock().unwrap() = true;
    let (release, leader) = blocked_leader(&c, &disk);
    let (c2, d2) = (c.clone(), disk.clone());
    let joiner = std::thread::spawn(move || {
        let mut push = |d: &mut Vec<u32>| {
            d.push(1);
            Ok(())
        };
        c2.update(Path::new(PATH), Changes::Checked, &mut push, |b| d2.lead(b))
    });
    until_waiting(&c, 1);
    release.send(()).unwrap();
    let lead_err = leader.join().unwrap().unwrap_err().to_string();
    let join_err = joiner.join().unwrap().unwrap_err().to_string();
    assert!(lead_err.contains("disk full"), "{lead_err}");
    assert!(join_err.contains("disk full"), "{join_err}");
    assert!(disk.doc.lock().unwrap().is_empty(), "nothing was stored");
}

#[test]
fn appends_from_many_threads_queued_behind_a_leader_all_land_in_one_write() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    let (release, leader) = blocked_leader(&c, &disk);
    let appenders: Vec<_> = (1..=50u32)
        .map(|n| {
            let (c2, d2) = (c.clone(), disk.clone());
            std::thread::spawn(move || {
                let mut push = |d: &mut Vec<u32>| {
                    d.push(n);
                    Ok(())
                };
                c2.update(Path::new(PATH), Changes::Appends, &mut push, |b| d2.lead(b))
            })
        })
        .collect();
    until_waiting(&c, 50);
    release.send(()).unwrap();
    leader.join().unwrap().unwrap();
    for a in appenders {
        a.join().unwrap().unwrap();
    }
    let mut doc = disk.doc.lock().unwrap().clone();
    doc.sort();
    assert_eq!(doc, (0..=50).collect::<Vec<u32>>());
    assert_eq!(
        *disk.writes.lock().unwrap(),
        1,
        "fifty-one appends, one write"
    );
}

#[test]
fn nothing_is_written_when_no_change_changed_anything() {
    let (c, disk) = (Combiners::default(), Disk::default());
    let mut same = |_: &mut Vec<u32>| Ok(());
    c.update(Path::new(PATH), Changes::Checked, &mut same, |b| {
        disk.lead(b)
    })
    .unwrap();
    assert_eq!(*disk.writes.lock().unwrap(), 0);
}

#[test]
fn a_change_that_fails_half_done_is_undone_in_the_batch() {
    let (c, disk) = (Arc::new(Combiners::default()), Arc::new(Disk::default()));
    let (release, leader) = blocked_leader(&c, &disk);
    let (c2, d2) = (c.clone(), disk.clone());
    let half = std::thread::spawn(move || {
        let mut half = |d: &mut Vec<u32>| {
            d.push(99);
            Err(Error::StoreRule("changed my mind".into()))
        };
        c2.update(Path::new(PATH), Changes::Checked, &mut half, |b| d2.lead(b))
    });
    until_waiting(&c, 1);
    release.send(()).unwrap();
    leader.join().unwrap().unwrap();
    assert!(half.join().unwrap().is_err());
    assert_eq!(
        *disk.doc.lock().unwrap(),
        [0],
        "the half-done change left no trace"
    );
    // Alone, too: nothing written at all.
    let mut alone = |d: &mut Vec<u32>| {
        d.push(98);
        Err(Error::StoreRule("no".into()))
    };
    assert!(c
        .update(Path::new(PATH), Changes::Checked, &mut alone, |b| disk
            .lead(b))
        .is_err());
    assert_eq!(*disk.doc.lock().unwrap(), [0]);
    assert_eq!(*disk.writes.lock().unwrap(), 1);
}
