//! Nothing a host starts for Bash outlives it: a real `teamhost run` whose
//! `probe` teammate holds a Bash call open (`bash-on-task`: a shell looping
//! on `sleep 0.02` until a file `release` appears) is killed with SIGKILL,
//! and the whole call tree must be gone within a second; a later host start
//! must leave no control group of the dead host's calls. The same for a
//! `teamhost teammate` process (the process backend) killed mid-call. Every
//! wait watches files (inotify) or pidfds; none sleeps.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::run_common::{shown, wait_on_files};
use teamhost::backends::{BackendOptions, TeammateMode};
use teamhost::embed::{Host, HostOptions, SpawnRequest};
use teamhost::home::started;
use teamhost::home::Home;
use teamhost::store::{NewTask, NewTeam};

/// How long the call tree may outlive its host.
const DEATH: Duration = Duration::from_secs(1);

/// A project with one probe `p` holding its task's Bash call open.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    manifest: PathBuf,
    team: String,
}

impl Project {
    fn new(team: &str) -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("work/p")).unwrap();
        let toml = format!(
            "[team]\nname = {team:?}\n[[teammate]]\nname = \"p\"\ncomponent = {:?}\n\
             prompt = \"complete-tasks bash-on-task\"\ncwd = \"work/p\"\nmode = \"acceptEdits\"\n\
             allowed_tools = [\"Bash\"]\n[[task]]\nsubject = \"Hold\"\n",
            teamhost_tests::PROBE
        );
        let manifest = root.join("team.toml");
        std::fs::write(&manifest, toml).unwrap();
        Project {
            home: root.join("home"),
            manifest,
            team: team.to_string(),
            root,
            _dir: dir,
        }
    }

    fn work(&self) -> PathBuf {
        self.root.join("work/p")
    }

    fn start(&self, args: &[&str], mode: &str) -> Child {
        Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .arg("--home")
            .arg(&self.home)
            .arg("run")
            .arg(&self.manifest)
            .args(["--lines", "--teammate-mode", mode, "--timeout", "100"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("teamhost runs")
    }

    /// Waits, watching the project's files, until `check` holds.
    fn wait_until(&self, what: &str, check: impl FnMut() -> bool) {
        wait_on_files(&[&self.root], what, check);
    }

    fn holding(&self) -> bool {
        self.work().join("holding-1").exists()
    }
}

/// `/proc/{pid}/stat`: `(state, ppid)`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = s.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    Some((state, rest.next()?.parse().ok()?))
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Every live descendant of `root`.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = all_pids()
        .into_iter()
        .filter_map(|p| stat(p).filter(|(s, _)| *s != 'Z').map(|(_, pp)| (p, pp)))
        .collect();
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(parent) = todo.pop() {
        for &(pid, _) in parents.iter().filter(|(_, pp)| *pp == parent) {
            found.push(pid);
            todo.push(pid);
        }
    }
    found
}

fn pid_ns(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()
}

fn describe(pid: u32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default();
    format!("{pid} ({cmd}; {:?})", stat(pid))
}

fn pidfd(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; a descriptor it returns is
    // ours.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

/// A Bash call tree, its processes held by pidfds (so a pid reused later is
/// never taken for one of them).
struct Tree {
    /// The host (or teammate process) that ran the call.
    host: u32,
    procs: Vec<(u32, OwnedFd)>,
    /// PID namespaces of the tree that are not the host's own.
    namespaces: BTreeSet<PathBuf>,
    /// The call's control groups, as directories.
    groups: Vec<PathBuf>,
}

impl Tree {
    /// The tree under `host` right now: every descendant (a host whose
    /// teammates run in-process starts no other process).
    fn of(host: u32) -> Tree {
        let pids = descendants(host);
        assert!(!pids.is_empty(), "no Bash call runs under {host}");
        let own = pid_ns(host);
        let namespaces = pids
            .iter()
            .filter_map(|&p| pid_ns(p))
            .filter(|ns| Some(ns) != own.as_ref())
            .collect();
        let groups = pids
            .iter()
            .flat_map(|&p| bash_groups(p))
            .collect::<BTreeSet<_>>();
        Tree {
            host,
            procs: pids.iter().filter_map(|&p| Some((p, pidfd(p)?))).collect(),
            namespaces,
            groups: groups.into_iter().collect(),
        }
    }

    /// Asserts that every process of the call is gone by `deadline`: the
    /// ones seen before, then any a scan of `/proc` still finds.
    fn assert_gone_by(self, deadline: Instant, what: &str) {
        let mut waiting = self.procs;
        loop {
            let mut late: Vec<u32> = wait_exits(waiting, deadline)
                .iter()
                .map(|(p, _)| *p)
                .collect();
            late.extend(stragglers(self.host, &self.namespaces));
            late.sort_unstable();
            late.dedup();
            if late.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: still running {DEATH:?} after its host's death: {}",
                late.iter()
                    .map(|&p| describe(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            waiting = late.iter().filter_map(|&p| Some((p, pidfd(p)?))).collect();
        }
    }
}

/// Live processes of `host`'s Bash calls, whichever were seen before: in
/// one of the calls' `namespaces`, or in a group of `host`'s calls.
fn stragglers(host: u32, namespaces: &BTreeSet<PathBuf>) -> Vec<u32> {
    let marker = format!("/teamhost-bash-{host}-");
    all_pids()
        .into_iter()
        .filter(|&p| stat(p).is_some_and(|(s, _)| s != 'Z'))
        .filter(|&p| {
            pid_ns(p).is_some_and(|ns| namespaces.contains(&ns))
                || std::fs::read_to_string(format!("/proc/{p}/cgroup"))
                    .is_ok_and(|c| c.contains(&marker))
        })
        .collect()
}

/// Waits until each process has exited (its pidfd is readable) or the
/// deadline passed; returns those still running.
fn wait_exits(mut procs: Vec<(u32, OwnedFd)>, deadline: Instant) -> Vec<(u32, OwnedFd)> {
    while !procs.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let mut fds: Vec<libc::pollfd> = procs
            .iter()
            .map(|(_, fd)| libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = (deadline - now).as_millis().clamp(1, 60_000) as libc::c_int;
        // SAFETY: `fds` is a live array of `fds.len()` pollfd.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            continue; // EINTR
        }
        procs = procs
            .into_iter()
            .zip(&fds)
            .filter(|(_, p)| p.revents == 0)
            .map(|(proc, _)| proc)
            .collect();
    }
    procs
}

/// The directories of the `teamhost-bash-*` groups process `pid` is in.
fn bash_groups(pid: u32) -> Vec<PathBuf> {
    let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mount_of = |controllers: &str| -> Option<PathBuf> {
        mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split_whitespace();
            let (fstype, _src, opts) = (r.next()?, r.next()?, r.next()?);
            let fits = if controllers.is_empty() {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup"
                    && controllers
                        .split(',')
                        .all(|c| opts.split(',').any(|o| o == c))
            };
            fits.then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
        })
    };
    own.lines()
        .filter(|l| l.contains("/teamhost-bash-"))
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some(mount_of(controllers)?.join(path.trim_start_matches('/')))
        })
        .collect()
}

/// SIGKILL through a pidfd taken before, then the moment it was sent.
fn sigkill(fd: &OwnedFd) -> Instant {
    // SAFETY: a live pidfd, a signal number, no siginfo, no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    Instant::now()
}

#[test]
fn a_killed_hosts_bash_call_dies_with_it_and_the_next_host_removes_its_groups() {
    let p = Project::new("orphans-run");
    let mut run = p.start(&[], "in-process");
    p.wait_until("p's Bash call running", || p.holding());
    let host = run.id();
    let tree = Tree::of(host);
    if teamhost::tools::confine::namespaces() {
        assert!(
            !tree.namespaces.is_empty(),
            "the call runs in a PID namespace of its own"
        );
    }
    let groups = tree.groups.clone();
    if teamhost::tools::cgroup::kind().is_ok() {
        assert!(!groups.is_empty(), "the call runs in its own group");
    }
    let killed = sigkill(&pidfd(host).unwrap());
    let _ = run.wait();
    tree.assert_gone_by(killed + DEATH, "the killed host's Bash call");

    // A new host (here resuming the team) removes the dead host's groups,
    // and runs the call to its end.
    std::fs::write(p.work().join("release"), "").unwrap();
    let out = p
        .start(&["--resume"], "in-process")
        .wait_with_output()
        .unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    for group in &groups {
        assert!(!group.exists(), "{} is left behind", group.display());
    }
    assert_eq!(
        std::fs::read_to_string(p.work().join("bash.log")).unwrap(),
        "1\n",
        "the resumed call ran to its end"
    );
}

#[test]
fn a_killed_teammate_processs_bash_call_dies_with_it() {
    // A `teamhost teammate` process runs its Bash calls itself: it is their
    // host. Started by a host in this test (a non-interactive `teamhost
    // run` keeps teammates in-process).
    let p = Project::new("orphans-process");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let host = rt.block_on(async {
        Host::with_options(
            Home::new(&p.home),
            HostOptions {
                backends: BackendOptions {
                    mode: TeammateMode::Process,
                    interactive: true,
                    teamhost_exe: Some(env!("CARGO_BIN_EXE_teamhost").into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .unwrap()
    });
    host.create_team(&p.team, NewTeam::default()).unwrap();
    host.team(&p.team)
        .unwrap()
        .create_task(NewTask {
            subject: "Hold".into(),
            ..Default::default()
        })
        .unwrap();
    let mut req = SpawnRequest::new(
        "p",
        teamhost_tests::PROBE,
        "complete-tasks bash-on-task",
        p.work(),
    );
    req.settings.mode = Some(teamhost::sandbox::PermissionMode::AcceptEdits);
    req.settings.rules =
        teamhost::sandbox::ToolRules::new(vec!["Bash"], req.settings.rules.disallowed_texts())
            .unwrap();
    rt.block_on(host.spawn(&p.team, req)).unwrap();
    p.wait_until("p's Bash call running", || p.holding());

    let records = started::list(&Home::new(&p.home), &p.team).unwrap();
    let record = records.iter().find(|r| r.name == "p").expect("p's process");
    let teammate = record.open_if_running().expect("p's process runs");
    let tree = Tree::of(record.pid);
    let killed = sigkill(&teammate);
    tree.assert_gone_by(killed + DEATH, "the killed teammate process's Bash call");

    // Done: whatever the host may have started again finds `release` and
    // ends, and is killed all the same.
    std::fs::write(p.work().join("release"), "").unwrap();
    drop(host);
    drop(rt);
    for r in started::list(&Home::new(&p.home), &p.team).unwrap_or_default() {
        if let Some(fd) = r.open_if_running() {
            sigkill(&fd);
        }
    }
}
