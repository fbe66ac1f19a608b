//! A led team's host dies on a three-node NATS cluster (issue 45): host A
//! (`teamhost run`, home A) runs the scripted lead component
//! (`guests/leadscript`), which forms the team, makes two tasks and spawns
//! two workers (the real `probe`) that hold their task open in a Bash call;
//! standby B (`teamhost run --adopt`, home B, the same manifest without a
//! goal) takes A's lease over after A is SIGKILLed, and with it the
//! workers and the lead: the lead's seat from the store (its spawns and
//! gifts over its life), its goal from the store too. The lead finishes
//! its script on B and deletes the team. Every task is completed once,
//! every report reaches the lead once, a spawn past `max_spawns_total` is
//! refused because the first life's spawns still count.
//!
//! Waits watch the files (inotify) or read the standby's lines; none
//! sleeps for a guess.

use std::path::{Path, PathBuf};

use crate::failover::completions;
use crate::nats_store::{store, Running};
use crate::run_common::{wait_on_files, write_scripted_models};
use teamhost::store::{OutgoingMessage, RunRecord, Team};
use teamhost_tests::nats_cluster::NatsCluster;

const TEAM: &str = "fl";

/// The lead's script. `task-once` and the refused re-spawns of w1 and w2
/// make it safe to run again from the top, which is what an adopted lead
/// does (its saved place died with its host). `wait-message tester go`
/// holds the adopted lead until the test has read its record.
const SCRIPT: &str = "create fl
task-once Step 1
task-once Step 2
spawn worker w1 model=fake budget=0.1 complete-tasks bash-on-task
spawn worker w2 model=fake budget=0.1 complete-tasks bash-on-task
wait-done
wait-reports 2
wait-message tester go
shutdown w1
wait-gone w1
spawn worker w3 complete-tasks
shutdown w2
wait-gone w2
delete";

/// Every model call answers one word.
const ANSWER: &str = r#"{"agents":[{"name":"any","match":[],"turns_by":"calls","after_last":"repeat-last",
  "turns":[{"text":"ok","usage":{"input_tokens":10,"output_tokens":10}}]}]}"#;

struct Led {
    dir: tempfile::TempDir,
    url: String,
    team: Team,
}

impl Led {
    fn new(url: String) -> Led {
        let dir = tempfile::tempdir().unwrap();
        let manifest = |goal: &str| {
            format!(
                "[team]\nname = {TEAM:?}\nstore = {url:?}\n\n[lead]\ncomponent = {:?}\n{goal}model = \"fake\"\nmax_teammates = 2\nmax_spawns_total = 2\n\n\
                 [lead.model_policy]\nbudget_usd = 0.5\n\n\
                 [[catalogue]]\nname = \"worker\"\ncomponent = {:?}\nmax_mode = \"acceptEdits\"\nallowed_tools = [\"Bash\"]\nmodels = [\"fake\"]\nbudget_usd = 1.0\n",
                teamhost_tests::LEADSCRIPT,
                teamhost_tests::PROBE,
            )
        };
        std::fs::write(
            dir.path().join("a.toml"),
            manifest(&format!("goal = '''\n{SCRIPT}\n'''\n")),
        )
        .unwrap();
        // The standby names the lead and the catalogue, not the goal: the
        // goal comes from the dead host's record.
        std::fs::write(dir.path().join("b.toml"), manifest("")).unwrap();
        write_scripted_models(dir.path(), ANSWER);
        let team = store(&url).team(TEAM).unwrap();
        Led { dir, url, team }
    }

    fn start(&self, which: &str, args: &[&str]) -> Running {
        let manifest = self.dir.path().join(format!("{which}.toml"));
        let models = self.dir.path().join("models.toml");
        let mut all = vec!["--json", "run"];
        all.extend_from_slice(args);
        all.extend(["--lease", "2", "--timeout", "120", "--model-mode", "live"]);
        all.extend(["--model-config", models.to_str().unwrap()]);
        all.push(manifest.to_str().unwrap());
        Running::start(&self.home(which), &all)
    }

    fn home(&self, which: &str) -> PathBuf {
        self.dir.path().join(format!("home-{which}"))
    }

    fn work(&self, name: &str) -> PathBuf {
        self.dir.path().join("work").join(name)
    }

    fn lead_log(&self, which: &str) -> String {
        std::fs::read_to_string(
            self.home(which)
                .join("logs")
                .join(TEAM)
                .join("team-lead.log"),
        )
        .unwrap_or_default()
    }

    /// The lead's run record in the store, if any.
    fn lead_run(&self) -> Option<RunRecord> {
        let s = store(&self.url);
        let f = s.backend().failover().expect("NATS keeps run records");
        f.read_runs(TEAM)
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .find(|r| r.name == "team-lead")
    }

    /// Whether `name` holds a task open in its Bash call (the probe's
    /// `holding-{id}` file in its directory).
    fn holding(&self, name: &str) -> bool {
        std::fs::read_dir(self.work(name)).is_ok_and(|d| {
            d.filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().starts_with("holding-"))
        })
    }
}

fn seat(run: &RunRecord) -> &serde_json::Value {
    run.lead
        .as_ref()
        .expect("the lead's run record carries its seat")
}

fn release(dir: &Path) {
    std::fs::write(dir.join("release"), "").unwrap();
}

#[test]
fn a_standby_adopts_a_killed_hosts_lead_with_its_seat_and_the_lead_finishes_on_a_cluster() {
    let Some(cluster) = NatsCluster::start_or_skip("led failover", 3) else {
        return;
    };
    let led = Led::new(cluster.url("fl"));
    let mut b = led.start("b", &["--adopt"]);
    b.wait_for_line("waiting for the lead to create team fl");
    let mut a = led.start("a", &[]);
    let work = led.dir.path().join("work");
    wait_on_files(&[work.as_path()], "w1 and w2 holding a task each", || {
        led.holding("w1") && led.holding("w2")
    });

    // What A keeps of its lead in the store: the seat as of its spawns.
    let before = led.lead_run().expect("A wrote the lead's run record");
    let s = seat(&before);
    assert_eq!(s["formed"], true, "{s}");
    assert_eq!(s["spawns"], 2, "{s}");
    assert_eq!(s["spawned"]["w1"], "worker", "{s}");
    assert_eq!(s["givenMicrodollars"], 200_000, "{s}");
    assert_eq!(s["goal"].as_str().map(str::trim), Some(SCRIPT), "{s}");
    assert_eq!(before.generation, 1);

    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    b.wait_for_line("adopted w1, w2, team-lead from host");

    // The record names B now, one generation on, with the same seat.
    let after = led.lead_run().expect("B rewrote the lead's run record");
    assert_eq!(after.adopted_from.as_deref(), Some(before.host.as_str()));
    assert_ne!(after.host, before.host);
    assert_eq!(after.generation, 2);
    assert_eq!(seat(&after)["spawns"], 2);
    assert_eq!(seat(&after)["givenMicrodollars"], 200_000);
    // A's own machine cannot bring the lead back beside B's: the resume is
    // refused before anything comes back, naming B.
    let resumed = led.start("a", &["--resume"]);
    let (status, _, shown) = resumed.finish_any();
    assert!(!status.success(), "{shown}");
    assert!(
        shown.contains(&format!("team fl's lead runs on host {}", after.host)),
        "{shown}"
    );
    assert_eq!(led.lead_run().map(|r| r.host), Some(after.host.clone()));
    led.team
        .deliver("team-lead", OutgoingMessage::new("tester", "go"))
        .unwrap();

    let (status, summary, shown) = b.finish();
    let shown = format!("{shown}\n--- B's lead\n{}", led.lead_log("b"));
    assert!(status.success(), "{shown}");
    assert_eq!(summary["outcome"], "completed", "{shown}");
    // The dead host's copies still hold their Bash calls: released only
    // now, they complete nothing more.
    release(&led.work("w1"));
    release(&led.work("w2"));

    let done = completions(&[led.work("w1"), led.work("w2")]);
    assert_eq!(
        done.into_iter().collect::<Vec<_>>(),
        [("1".to_string(), 1), ("2".to_string(), 1)],
        "each task completed once: {shown}"
    );
    let log = led.lead_log("b");
    // It was given its goal again and ran it from the top, making nothing
    // twice.
    assert!(log.contains("task-once\tOK\t#1 (there already)"), "{log}");
    assert!(log.contains("task-once\tOK\t#2 (there already)"), "{log}");
    assert!(!log.contains("spawn\tOK"), "{log}");
    // Its first life's spawns still count against max_spawns_total.
    assert!(
        log.contains(
            "spawn\tERR\tdenied: the lead may spawn at most 2 teammates over its life and has spawned 2"
        ),
        "{log}"
    );
    for id in 1..=2 {
        let reports = format!("{}{}", led.lead_log("a"), log)
            .lines()
            .filter(|l| l.starts_with(&format!("report\tOK\t{id} from ")))
            .count();
        assert_eq!(reports, 1, "task {id}'s reports:\n{log}");
    }
    assert!(log.contains("delete\tOK"), "{log}");
    // The team is gone, and with it every run record.
    let s = store(&led.url);
    let runs = s.backend().failover().unwrap().read_runs(TEAM).unwrap();
    assert!(runs.is_empty(), "run records left: {runs:?}");
}
