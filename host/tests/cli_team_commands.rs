//! `teamhost ps`, `team list`, `stop` and `logs` through the real binary,
//! over real records and real processes: a `sleep` child stands for the
//! host a record names (it has a pid and a start time like any host), so a
//! test costs milliseconds, not a run. A pid whose start time differs from
//! the record's is never taken for the recorded process.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use teamhost::durable::write_json;
use teamhost::home::process::start_time;
use teamhost::home::run_claim::HostRecord;
use teamhost::home::started::{self, Started};
use teamhost::home::Home;
use teamhost::store::{NewMember, NewTeam, Store};

fn teamhost(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", shown(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", shown(out)))
}

/// A process standing for a host: it runs until killed.
fn stand_in() -> Child {
    Command::new("sleep").arg("600").spawn().unwrap()
}

/// Team `t` with members alice and bob.
fn team(home: &Path) -> teamhost::store::Team {
    let team = Store::new(Home::new(home)).team("t").unwrap();
    team.create(NewTeam::default()).unwrap();
    for name in ["alice", "bob"] {
        team.add_member(NewMember {
            name: name.into(),
            ..Default::default()
        })
        .unwrap();
    }
    team
}

/// Records `pid` (started at `start`) as the run hosting `t`.
fn claim(home: &Path, pid: u32, start: Option<u64>) {
    let home = Home::new(home);
    std::fs::create_dir_all(home.kept_dir("t")).unwrap();
    write_json(
        &home.run_claim("t"),
        &HostRecord {
            host_pid: pid,
            host_start_time: start,
            claimed_at: 1,
        },
    )
    .unwrap();
}

#[test]
fn ps_and_team_list_show_a_host_alive_only_while_its_start_time_matches() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let t = team(home);
    let mut host = stand_in();
    let pid = host.id();
    claim(home, pid, start_time(pid));
    // bob runs in its own process, started by that host.
    let mut bob = stand_in();
    let mut rec = Started::new("bob", "process", bob.id());
    rec.host_pid = pid;
    rec.host_start_time = start_time(pid);
    started::record(&Home::new(home), "t", &rec).unwrap();
    t.set_active("alice", true).unwrap();

    let ps = json(&teamhost(home, &["ps", "--json"]));
    let row = &ps.as_array().unwrap()[0];
    assert_eq!(row["team"], "t", "{ps}");
    assert_eq!(row["state"], "running", "{ps}");
    assert_eq!(row["host"]["pid"], pid, "{ps}");
    assert_eq!(row["host"]["alive"], true, "{ps}");
    assert_eq!(row["teammates"][0]["name"], "bob", "{ps}");
    assert_eq!(row["teammates"][0]["process"]["pid"], bob.id(), "{ps}");
    assert_eq!(row["teammates"][0]["process"]["alive"], true, "{ps}");
    let text = teamhost(home, &["ps"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("{pid} alive")) && text.contains("bob"),
        "{text}"
    );

    let list = json(&teamhost(home, &["team", "list", "--json"]));
    assert_eq!(list[0]["team"], "t");
    assert_eq!(list[0]["state"], "running");
    assert_eq!(list[0]["members"], 2, "the lead is not counted: {list}");
    t.set_active("alice", false).unwrap();
    let list = json(&teamhost(home, &["team", "list", "--json"]));
    assert_eq!(list[0]["state"], "idle", "{list}");

    // The same pid with another start time is another process: the host
    // is dead, and so is bob's record of a process started then.
    claim(home, pid, start_time(pid).map(|s| s + 1));
    let mut rec = rec.clone();
    rec.start_time = rec.start_time.map(|s| s + 1);
    rec.host_start_time = rec.host_start_time.map(|s| s + 1);
    started::record(&Home::new(home), "t", &rec).unwrap();
    let ps = json(&teamhost(home, &["ps", "--json"]));
    assert_eq!(ps, serde_json::json!([]), "nothing runs: {ps}");
    let all = json(&teamhost(home, &["ps", "-a", "--json"]));
    assert_eq!(all[0]["host"]["alive"], false, "{all}");
    assert_eq!(all[0]["teammates"][0]["process"]["alive"], false, "{all}");
    let list = teamhost(home, &["team", "list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.lines().any(|l| l.starts_with("t ")
            && l.contains("stopped")
            && l.contains(&format!("{pid} dead"))),
        "{list}"
    );
    host.kill().unwrap();
    bob.kill().unwrap();
    host.wait().unwrap();
    bob.wait().unwrap();
}

#[test]
fn stop_signals_the_recorded_host_and_never_a_process_whose_start_time_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let mut other = stand_in();
    // A record naming this pid as it was at another time: not this process.
    claim(home, other.id(), start_time(other.id()).map(|s| s + 1));
    let out = teamhost(home, &["stop", "t"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("nothing to stop"),
        "{}",
        shown(&out)
    );
    assert!(other.try_wait().unwrap().is_none(), "it was signalled");

    // The recorded host: SIGTERM (a run's own stop), waited for.
    let mut host = stand_in();
    claim(home, host.id(), start_time(host.id()));
    let out = teamhost(home, &["stop", "t", "--timeout", "30"]);
    assert!(out.status.success(), "{}", shown(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("stopped team t: host {}", host.id())),
        "{}",
        shown(&out)
    );
    assert_eq!(host.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert!(other.try_wait().unwrap().is_none());
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn stop_ends_teammate_processes_a_dead_host_left_and_refuses_an_unknown_team() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let mut bob = stand_in();
    let mut rec = Started::new("bob", "process", bob.id());
    rec.host_pid = u32::MAX - 1;
    rec.host_start_time = Some(1);
    started::record(&Home::new(home), "t", &rec).unwrap();
    let out = teamhost(home, &["stop", "t", "--json"]);
    let done = json(&out);
    assert_eq!(
        done["processes"]["stopped"],
        serde_json::json!(["bob"]),
        "{done}"
    );
    assert_eq!(bob.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert!(started::list(&Home::new(home), "t").unwrap().is_empty());

    let out = teamhost(home, &["stop", "nope"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no team \"nope\" on this machine or in the store")
            && err.contains("the teams here are: t"),
        "{err}"
    );
}

#[test]
fn a_late_write_to_a_deleted_team_fails_and_never_brings_its_directory_back() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    // This process holds the team, as a teammate's host does.
    let held = team(home);
    let out = teamhost(home, &["team", "delete", "t", "--force"]);
    assert!(out.status.success(), "{}", shown(&out));
    let dir = home.join("teams/t");
    assert!(!dir.exists());

    let late = held
        .deliver(
            "alice",
            teamhost::store::OutgoingMessage::new("bob", "too late"),
        )
        .unwrap_err();
    assert!(
        matches!(late, teamhost::Error::TeamDeleted { .. }),
        "{late:?}"
    );
    assert!(
        late.to_string().contains("team \"t\" was deleted"),
        "{late}"
    );
    let usage = held
        .write_model_usage("alice", &Default::default())
        .unwrap_err();
    assert!(
        matches!(usage, teamhost::Error::TeamDeleted { .. }),
        "{usage:?}"
    );
    let task = held
        .create_task(teamhost::store::NewTask {
            subject: "late".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(task, teamhost::Error::TeamDeleted { .. }),
        "{task:?}"
    );
    assert!(held.take_unread("alice").unwrap().is_empty());
    assert!(!dir.exists(), "a late write made {} again", dir.display());
    assert!(!home.join("tasks/t").exists());

    let out = teamhost(home, &["ps", "-a"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no teams");
}

#[test]
fn ps_shows_a_deleted_team_it_keeps_records_of_as_deleted_and_stop_has_nothing_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let out = teamhost(home, &["team", "delete", "t", "--force"]);
    assert!(out.status.success(), "{}", shown(&out));
    // What a lead that deleted its own team leaves: its kept conversation.
    let kept = Home::new(home).kept_dir("t");
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("team-lead.conversation.json"), "{}").unwrap();

    let rows = json(&teamhost(home, &["ps", "-a", "--json"]));
    assert_eq!(rows[0]["team"], "t", "{rows}");
    assert_eq!(rows[0]["state"], "deleted", "{rows}");
    let out = teamhost(home, &["ps", "-a"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("t ") && l.contains(" deleted ")),
        "{text}"
    );
    // Without -a: nothing of it runs.
    let out = teamhost(home, &["ps"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("deleted"));

    let out = teamhost(home, &["stop", "t"]);
    assert!(out.status.success(), "{}", shown(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("team t was deleted and nothing of it runs"),
        "{said}"
    );
    assert!(!said.contains("ps -a"), "{said}");
}

#[test]
fn task_list_of_a_team_that_does_not_exist_fails_naming_it_and_the_teams_that_do() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let out = teamhost(home, &["task", "list", "--team", "nosuch"]);
    assert_eq!(out.status.code(), Some(1), "{}", shown(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no team \"nosuch\"") && err.contains("the teams here are: t"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("no tasks"));
    // A team that exists with no tasks still says so, and succeeds.
    let out = teamhost(home, &["task", "list", "--team", "t"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no tasks");
}

#[test]
fn logs_prints_each_teammates_lines_without_escape_sequences() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let h = Home::new(home);
    std::fs::create_dir_all(h.team_logs("t")).unwrap();
    std::fs::write(
        h.teammate_log("t", "alice"),
        "\u{1b}[31mred\u{1b}[0m line\n\u{1b}]0;title\u{7}a bell\u{7}\nbob | forged\rX\n",
    )
    .unwrap();
    std::fs::write(h.teammate_log("t", "bob"), "hello\n").unwrap();

    let out = teamhost(home, &["logs", "t"]);
    assert!(out.status.success(), "{}", shown(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'),
        "{text:?}"
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "alice | red line",
            "alice | a bell\\u{7}",
            "alice | bob | forged\\u{d}X",
            "bob   | hello"
        ],
        "{text}"
    );

    // The last line of each.
    let out = teamhost(home, &["logs", "t", "--tail", "1"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["alice | bob | forged\\u{d}X", "bob   | hello"],
        "{}",
        shown(&out)
    );
    // Two lives of bob's: `--since` starts at the life in progress then.
    std::fs::write(
        h.teammate_log("t", "bob"),
        "--- teamhost: bob started 2026-11-30T09:00:00.000Z (host process 7) ---\n\
         first life\n\
         --- teamhost: bob resumed 2026-11-30T10:00:00.000Z (host process 8) ---\n\
         second life\n",
    )
    .unwrap();
    let since = |at: &str| {
        let out = teamhost(home, &["logs", "t", "bob", "--since", at]);
        assert!(out.status.success(), "{}", shown(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let second = since("2026-11-30T10:30:00Z");
    assert!(
        second.starts_with("--- teamhost: bob resumed") && !second.contains("first life"),
        "{second}"
    );
    let both = since("2026-11-30T09:30:00Z");
    assert!(
        both.contains("first life") && both.contains("second life"),
        "{both}"
    );
    // A time before every life shows them all; `1h` is an hour ago, in
    // the second life (which has not ended).
    assert!(since("2020-01-01T00:00:00Z").contains("first life"));
    assert_eq!(since("1h"), second);
    let out = teamhost(home, &["logs", "t", "--since", "yesterday"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("30s, 10m, 2h, 1d"),
        "{}",
        shown(&out)
    );
    std::fs::write(h.teammate_log("t", "bob"), "hello\n").unwrap();
    let out = teamhost(home, &["logs", "t", "bob"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello\n",
        "{}",
        shown(&out)
    );
    let out = teamhost(home, &["logs", "t", "carol"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no log of \"carol\"") && err.contains("alice, bob"),
        "{err}"
    );
    let out = teamhost(home, &["logs", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("teamhost team list"));
}

#[test]
fn logs_follow_prints_new_lines_until_the_host_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    team(home);
    let h = Home::new(home);
    std::fs::create_dir_all(h.team_logs("t")).unwrap();
    let log = h.teammate_log("t", "alice");
    std::fs::write(&log, "first\n").unwrap();
    let mut host = stand_in();
    claim(home, host.id(), start_time(host.id()));

    let mut follow = Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(["logs", "-f", "t", "alice"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follow.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "first");
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(b"second \x1b[1mbold\x1b[0m\n").unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "second bold");

    host.kill().unwrap();
    host.wait().unwrap();
    let status = follow.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(lines.next().is_none(), "it printed nothing more");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("has ended"), "{err}");
    // It said what it followed, and until when.
    assert!(
        err.contains("following alice's log of team t")
            && err.contains(&format!("until its host (process {})", host.id())),
        "{err}"
    );
}

/// A real `teamhost run` whose probe waits for the lead's answer to a
/// permission request: `ps` shows it, `stop` ends it through the run's
/// own stop (the teammate shut down, the team deleted) and says so.
#[test]
fn stop_ends_a_real_run_through_its_own_shutdown_and_ps_showed_it_before() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let home = root.join("home");
    std::fs::create_dir_all(root.join("work/p")).unwrap();
    let manifest = root.join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"live\"\n[[teammate]]\nname = \"p\"\ncomponent = {:?}\nprompt = \"complete-tasks bash-on-task\"\ncwd = \"work/p\"\nmode = \"acceptEdits\"\n[[task]]\nsubject = \"Step 1\"\n",
            teamhost_tests::PROBE
        ),
    )
    .unwrap();
    let run = crate::run_common::teamhost()
        .arg("--home")
        .arg(&home)
        .arg("run")
        .arg(&manifest)
        .args([
            "--lines",
            "--teammate-mode",
            "in-process",
            "--timeout",
            "100",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let team = Store::new(Home::new(&home)).team("live").unwrap();
    crate::run_common::wait_on_files(&[&home, root], "p's permission request", || {
        !teamhost::approvals::pending(&team)
            .unwrap_or_default()
            .is_empty()
    });

    let ps = json(&teamhost(&home, &["ps", "--json"]));
    assert_eq!(ps[0]["team"], "live", "{ps}");
    assert_eq!(ps[0]["host"]["pid"], run.id(), "{ps}");
    assert_eq!(ps[0]["host"]["alive"], true, "{ps}");
    assert_eq!(ps[0]["teammates"][0]["name"], "p", "{ps}");
    assert_eq!(ps[0]["teammates"][0]["backend"], "in-process", "{ps}");

    let out = teamhost(&home, &["stop", "live"]);
    assert!(out.status.success(), "{}", shown(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("stopped team live: host {} shut p down", run.id())),
        "{}",
        shown(&out)
    );
    // `stop` returned once the run had ended.
    let ran = run.wait_with_output().unwrap();
    let output = shown(&ran);
    assert!(
        output.contains("stopping: interrupted (SIGTERM)"),
        "{output}"
    );
    assert!(
        !root.join("work/p/bash.log").exists(),
        "the call waiting for the lead was never run"
    );
    let list = json(&teamhost(&home, &["team", "list", "--json"]));
    assert_eq!(
        list,
        serde_json::json!([]),
        "the run deleted its team: {list}"
    );
}
