//! A led team after a crash (issue 45): the real `teamhost run` of a team
//! whose lead is the scripted lead component (`guests/leadscript`) is
//! killed with SIGKILL while its teammates (the real `probe`) hold tasks
//! open in tool calls; `teamhost run --resume` brings back the teammates
//! and the lead with its seat, and the lead finishes the script. Every wait
//! watches the files (inotify), none sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::run_common::{shown, teamhost, wait_on_files};
use serde_json::Value;

const TEAM: &str = "resume-led";

/// The lead's script: four tasks, two workers that hold each task open in
/// a Bash call until `release` exists in their directory; once every task
/// is done and reported, w1 goes and a third spawn is tried, within
/// `max_teammates` but past `max_spawns_total` (refused only if the spawns
/// of the first life still count); then w2 goes and the team is deleted.
const SCRIPT: &str = "create resume-led
task Step 1
task Step 2
task Step 3
task Step 4
spawn worker w1 complete-tasks bash-on-task
spawn worker w2 complete-tasks bash-on-task
wait-done
wait-reports 4
shutdown w1
wait-gone w1
spawn worker w3 complete-tasks
shutdown w2
wait-gone w2
delete";

struct Led {
    dir: tempfile::TempDir,
    home: PathBuf,
    manifest: PathBuf,
}

impl Led {
    fn new() -> Led {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("team.toml");
        std::fs::write(
            &manifest,
            format!(
                "[team]\nname = {TEAM:?}\n\n[lead]\ncomponent = {:?}\ngoal = '''\n{SCRIPT}\n'''\nmax_teammates = 2\nmax_spawns_total = 2\n\n\
                 [[catalogue]]\nname = \"worker\"\ncomponent = {:?}\nmax_mode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\n",
                teamhost_tests::LEADSCRIPT,
                teamhost_tests::PROBE,
            ),
        )
        .unwrap();
        Led {
            home: dir.path().join("home"),
            manifest,
            dir,
        }
    }

    fn work(&self, name: &str) -> PathBuf {
        self.dir.path().join("work").join(name)
    }

    fn start(&self, args: &[&str]) -> Child {
        teamhost()
            .arg("--home")
            .arg(&self.home)
            .arg("run")
            .arg(&self.manifest)
            .args(["--lines", "--timeout", "100"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("teamhost runs")
    }

    fn holding(&self, name: &str) -> bool {
        std::fs::read_dir(self.work(name)).is_ok_and(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("holding-"))
        })
    }

    fn record(&self) -> Value {
        let path = self.home.join("kept").join(TEAM).join(".lead.json");
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    fn lead_log(&self) -> String {
        std::fs::read_to_string(self.home.join("logs").join(TEAM).join("team-lead.log"))
            .unwrap_or_default()
    }

    /// Task ids in both workers' `completed.log`, with repeats, sorted.
    fn completions(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = ["w1", "w2"]
            .iter()
            .flat_map(|n| {
                std::fs::read_to_string(self.work(n).join("completed.log"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| l.parse().ok())
                    .collect::<Vec<_>>()
            })
            .collect();
        ids.sort();
        ids
    }
}

fn watched(led: &Led) -> [&Path; 2] {
    [led.home.as_path(), led.dir.path()]
}

#[test]
fn a_led_run_killed_mid_work_resumes_with_its_lead_s_seat_and_finishes_every_task_once() {
    let led = Led::new();
    let mut run = led.start(&[]);
    wait_on_files(&watched(&led), "both workers holding a task", || {
        led.holding("w1") && led.holding("w2")
    });
    run.kill().unwrap(); // SIGKILL
    let _ = run.wait();

    // What the dead host kept of its lead's seat.
    let record = led.record();
    assert_eq!(record["formed"], true, "{record}");
    assert_eq!(record["spawns"], 2, "{record}");
    assert_eq!(record["spawned"]["w1"], "worker", "{record}");
    assert_eq!(record["spawned"]["w2"], "worker", "{record}");
    assert!(
        led.completions().is_empty(),
        "nothing completed before the kill"
    );

    // Only the component that led the team leads it again: another one is
    // refused before anything is brought back.
    let refused = led
        .start(&["--resume", "--lead", teamhost_tests::ECHO])
        .wait_with_output()
        .unwrap();
    assert!(!refused.status.success(), "{}", shown(&refused));
    assert!(
        shown(&refused).contains("is not the one that led this team"),
        "{}",
        shown(&refused)
    );
    assert!(
        !led.lead_log().contains("resumed\tOK"),
        "{}",
        led.lead_log()
    );

    for name in ["w1", "w2"] {
        std::fs::write(led.work(name).join("release"), "").unwrap();
    }
    let out = led.start(&["--resume"]).wait_with_output().unwrap();
    assert!(out.status.success(), "{}", shown(&out));
    let text = shown(&out);
    assert!(
        text.contains("respawned w1, w2") && text.contains("resumed the lead"),
        "{text}"
    );
    assert!(text.contains("the lead's run completed"), "{text}");

    // Every task completed once, across both lives.
    assert_eq!(led.completions(), vec![1, 2, 3, 4], "{text}");
    let log = led.lead_log();
    // The lead went on from where its script was, not from the start.
    assert!(log.contains("resumed\tOK\tat line 8"), "{log}");
    assert_eq!(log.matches("create\tOK").count(), 1, "{log}");
    // Its spawns of the first life still count against max_spawns_total.
    assert!(
        log.contains("spawn\tERR\tdenied: the lead may spawn at most 2 teammates over its life and has spawned 2"),
        "{log}"
    );
    // Each completion reached the lead once.
    for id in 1..=4 {
        let reports = log
            .lines()
            .filter(|l| l.starts_with(&format!("report\tOK\t{id} from ")))
            .count();
        assert_eq!(reports, 1, "task {id}'s reports:\n{log}");
    }
    assert!(log.contains("delete\tOK"), "{log}");
    // The lead deleted its team: its seat's record went with it (a later
    // team of the name is not taken for a led one).
    assert!(!led.home.join("kept").join(TEAM).join(".lead.json").exists());
}
