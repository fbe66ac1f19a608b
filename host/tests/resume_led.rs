//! A led team after a crash (issue 45): the real `teamhost run` of a team
//! whose lead is the scripted lead component (`guests/leadscript`) is
//! killed with SIGKILL while its teammates (the real `probe`) hold tasks
//! open in tool calls; `teamhost run --resume` brings back the teammates
//! and the lead with its seat, and the lead finishes the script. Every wait
//! watches the files (inotify), none sleeps.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use crate::run_common::{shown, teamhost, wait_on_files, write_scripted_models};
use serde_json::Value;

const TEAM: &str = "resume-led";

/// The lead's script: four tasks, two workers that hold each task open in
/// a Bash call until `release` exists in their directory; once every task
/// is done and reported, w1 goes and a third spawn is tried, within
/// `max_teammates` but past `max_spawns_total` (refused only if the spawns
/// of the first life still count); then w2 goes and the team is deleted.
///
/// Its purse: US$0.50. Before the crash it spends one model call
/// (US$0.12003, [`CALL`]) and gives each worker US$0.10; after it, one more
/// call fits (US$0.05994 left) and the next does not, which holds only if
/// what the first life spent and gave still counts.
const SCRIPT: &str = "create resume-led
task Step 1
task Step 2
task Step 3
task Step 4
think 1 8000
spawn worker w1 model=fake budget=0.1 complete-tasks bash-on-task
spawn worker w2 model=fake budget=0.1 complete-tasks bash-on-task
wait-done
wait-reports 4
think 1 8000
think 1 8000
shutdown w1
wait-gone w1
spawn worker w3 complete-tasks
shutdown w2
wait-gone w2
delete";

/// What one call of the scripted model costs, in microdollars: 10 tokens
/// in at $3 and 8,000 out at $15 per million.
const CALL: u64 = 30 + 120_000;

/// Every call answers one word and reports 8,000 output tokens.
const ANSWER: &str = r#"{"agents":[{"name":"any","match":[],"turns_by":"calls","after_last":"repeat-last",
  "turns":[{"text":"ok","usage":{"input_tokens":10,"output_tokens":8000}}]}]}"#;

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
                "[team]\nname = {TEAM:?}\n\n[lead]\ncomponent = {:?}\ngoal = '''\n{SCRIPT}\n'''\nmodel = \"fake\"\nmax_teammates = 2\nmax_spawns_total = 2\n\n\
                 [lead.model_policy]\nbudget_usd = 0.5\nmax_tokens_per_call = 8000\n\n\
                 [[catalogue]]\nname = \"worker\"\ncomponent = {:?}\nmax_mode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\nmodels = [\"fake\"]\nbudget_usd = 1.0\n",
                teamhost_tests::LEADSCRIPT,
                teamhost_tests::PROBE,
            ),
        )
        .unwrap();
        write_scripted_models(dir.path(), ANSWER);
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
            .args(["--lines", "--timeout", "100", "--model-mode", "live"])
            .arg("--model-config")
            .arg(self.dir.path().join("models.toml"))
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
    assert_eq!(record["givenMicrodollars"], 200_000, "{record}");
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
    assert!(log.contains("resumed\tOK\tat line 9"), "{log}");
    // Its log marks where each life began.
    assert_eq!(
        log.matches("--- teamhost: team-lead started ").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("--- teamhost: team-lead resumed ").count(),
        1,
        "{log}"
    );
    assert_eq!(log.matches("create\tOK").count(), 1, "{log}");
    // Its spawns of the first life still count against max_spawns_total.
    assert!(
        log.contains("spawn\tERR\tdenied: the lead may spawn at most 2 teammates over its life and has spawned 2"),
        "{log}"
    );
    // What it spent on its own call and gave in its first life still
    // counts: one more call fits, a second does not.
    assert!(
        log.contains(&format!("think\tOK\tspent {CALL} left {}", 500_000 - CALL)),
        "{log}"
    );
    let left = 500_000 - 2 * CALL - 200_000;
    assert!(
        log.contains(&format!("think\tOK\tspent {} left {left}", 2 * CALL)),
        "{log}"
    );
    assert!(
        log.contains("think\tERR\tbudget-exhausted: ")
            && log.contains("$0.200000 given to teammates"),
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
